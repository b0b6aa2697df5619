import os
import sys

pid = os.posix_spawn("/bin/sh", ["sh", "-c", "exit 4"], os.environ)
print("posix_spawn", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
pid = os.posix_spawnp("true", ["true"], os.environ)
print("posix_spawnp", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
print("spawnv", os.spawnv(os.P_WAIT, "/bin/sh", ["sh", "-c", "exit 9"]))
sys.stdout.flush()
print("system", os.waitstatus_to_exitcode(os.system("echo from system; exit 2")))
with os.popen("printf 'a\\nb\\n' | sort -r") as p:
    print("popen", p.read().split())
r, w = os.pipe()
pid = os.posix_spawn(sys.executable, [sys.executable, "-c", "print('child python')"], os.environ,
                     file_actions=[(os.POSIX_SPAWN_DUP2, w, 1), (os.POSIX_SPAWN_CLOSE, r)])
os.close(w)
print(os.read(r, 100), os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
