from pathlib import Path

root = Path("tree")
(root / "x" / "y").mkdir(parents=True)
for i in range(5):
    (root / "x" / f"n{i}.txt").write_text(f"number {i}\n" * i)
(root / "x" / "y" / "data.bin").write_bytes(bytes(range(10)))
print(sorted(p.name for p in root.rglob("*.txt")))
print(sorted(str(p) for p in root.glob("x/*")))
print((root / "x" / "n3.txt").read_text().splitlines())
print((root / "x" / "y" / "data.bin").stat().st_size, (root / "x").is_dir(), (root / "nope").exists())
p = root / "x" / "n1.txt"
q = p.rename(root / "renamed.txt")
print(q, q.exists(), p.exists(), q.suffix, q.stem, q.parent.name)
(root / "x" / "n2.txt").replace(root / "renamed.txt")
print(q.read_text())
print(Path(".").resolve() == Path.cwd(), Path("tree/x/../x").resolve() == (root / "x").resolve())
print(Path.home() == Path.cwd(), Path("a/b/c.tar.gz").suffixes, Path("/usr/bin").parts)
with (root / "log.txt").open("a") as f:
    f.write("one\n")
with (root / "log.txt").open("a") as f:
    f.write("two\n")
print((root / "log.txt").read_text().split())
for f in sorted(root.rglob("*"), key=lambda x: -len(x.parts)):
    f.rmdir() if f.is_dir() else f.unlink()
root.rmdir()
print(root.exists())
