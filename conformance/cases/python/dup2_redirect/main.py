import contextlib
import io
import os
import sys

print(sys.stdin.readline().strip(), "from stdin")
sys.stdout.flush()
saved = os.dup(1)
fd = os.open("captured.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.dup2(fd, 1)
os.close(fd)
print("into the file")
sys.stdout.flush()
os.write(1, b"raw write into the file\n")
os.dup2(saved, 1)
os.close(saved)
print("back on stdout")
print(open("captured.txt").read(), end="")
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    print("captured by redirect_stdout")
print(repr(buf.getvalue()))
with open("input.txt") as f:
    os.dup2(f.fileno(), 0)
sys.stdin = os.fdopen(0, "r")
n = int(sys.stdin.readline())
print(n, sum(map(int, sys.stdin.readline().split())))
with contextlib.redirect_stderr(sys.stdout):
    print("stderr into stdout", file=sys.stderr)
