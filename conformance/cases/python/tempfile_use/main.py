import os
import tempfile

with tempfile.TemporaryFile() as f:
    f.write(b"unnamed")
    f.seek(0)
    print(f.read())
with tempfile.NamedTemporaryFile("w+", suffix=".txt") as f:
    f.write("named")
    f.flush()
    print(os.path.basename(f.name).endswith(".txt"), open(f.name).read())
    print(os.path.dirname(f.name) == tempfile.gettempdir())
with tempfile.TemporaryDirectory() as d:
    for i in range(3):
        with open(os.path.join(d, "f%d" % i), "w") as g:
            g.write(str(i))
    os.mkdir(os.path.join(d, "sub"))
    print(sorted(os.listdir(d)))
print(os.path.exists(d))
fd, path = tempfile.mkstemp(dir=".")
os.write(fd, b"in the working dir")
os.close(fd)
print(open(path, "rb").read(), oct(os.stat(path).st_mode & 0o777))
os.unlink(path)
with tempfile.SpooledTemporaryFile(max_size=100) as s:
    s.write(b"x" * 50)
    print(s._rolled)
    s.write(b"x" * 100)
    print(s._rolled)
