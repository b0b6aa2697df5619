import subprocess
import sys

r = subprocess.run(["echo", "hello", "world"], capture_output=True, text=True)
print(r.returncode, repr(r.stdout))
print(subprocess.check_output(["tr", "a-z", "A-Z"], input=b"shout\n"))
r = subprocess.run(["sh", "-c", "exit 7"])
print("exit", r.returncode)
p1 = subprocess.Popen(["seq", "1", "1000"], stdout=subprocess.PIPE)
p2 = subprocess.Popen(["wc", "-l"], stdin=p1.stdout, stdout=subprocess.PIPE)
p1.stdout.close()
print("lines", p2.communicate()[0].strip())
p1.wait()
r = subprocess.run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"])
print("signal", r.returncode)
r = subprocess.run("echo $((6 * 7)) | cat", shell=True, capture_output=True)
print("shell", r.stdout)
try:
    subprocess.run(["sleep", "5"], timeout=0.2)
except subprocess.TimeoutExpired as e:
    print("timeout", e.cmd)
try:
    subprocess.run(["no-such-program-here"])
except FileNotFoundError as e:
    print("missing", e.errno)
