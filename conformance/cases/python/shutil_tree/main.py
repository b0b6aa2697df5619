import os
import shutil

os.makedirs("src/a/b", exist_ok=True)
for i, p in enumerate(["src/top.txt", "src/a/mid.txt", "src/a/b/deep.txt"]):
    with open(p, "w") as f:
        f.write("file %d\n" % i * (i + 1) * 1000)
os.utime("src/top.txt", (1000000000, 1000000000))
os.chmod("src/a/mid.txt", 0o640)
shutil.copyfile("src/top.txt", "copy.txt")
shutil.copy2("src/top.txt", "copy2.txt")
print("copy", open("copy.txt").read() == open("src/top.txt").read(), int(os.stat("copy2.txt").st_mtime))
shutil.copy("src/a/mid.txt", "mid.txt")
print("mode", oct(os.stat("mid.txt").st_mode & 0o777))
shutil.copytree("src", "dst")
walk = [(d, sorted(dn), sorted(fn)) for d, dn, fn in os.walk("dst")]
print("copytree", sorted(walk))
shutil.move("dst/a", "moved")
shutil.move("copy.txt", "moved/renamed.txt")
print("move", sorted(os.listdir("moved")), os.path.exists("dst/a"))
with open("src/a/b/deep.txt", "rb") as a, open("big.copy", "wb") as b:
    shutil.copyfileobj(a, b, 4096)
print("copyfileobj", os.path.getsize("big.copy"))
for d in ("src", "dst", "moved"):
    shutil.rmtree(d)
print("left", sorted(os.listdir(".")))
print("which", shutil.which("python3"), shutil.which("no-such-tool"))
