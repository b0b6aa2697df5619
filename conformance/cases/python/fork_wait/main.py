import os
import signal
import sys

r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    os.write(w, b"from the child")
    os._exit(3)
os.close(w)
print(os.read(r, 100))
_, status = os.waitpid(pid, 0)
print("exit", os.WIFEXITED(status), os.waitstatus_to_exitcode(status))
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    os.kill(os.getpid(), signal.SIGKILL)
_, status = os.waitpid(pid, 0)
print("signal", os.WIFSIGNALED(status), os.WTERMSIG(status) == signal.SIGKILL)
sys.stdout.flush()
pids = []
for i in range(3):
    pid = os.fork()
    if pid == 0:
        os._exit(10 + i)
    pids.append(pid)
codes = sorted(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids)
print("codes", codes)
try:
    os.wait()
except ChildProcessError:
    print("no more children")
