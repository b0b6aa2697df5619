import hashlib
import io
import os
import tarfile
import zipfile

files = {"a.txt": b"alpha\n" * 100, "dir/b.bin": bytes(range(256)) * 50, "dir/c.txt": b""}
with zipfile.ZipFile("out.zip", "w", compression=zipfile.ZIP_DEFLATED) as z:
    for name, data in files.items():
        z.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 2, 3, 4, 6)), data, zipfile.ZIP_DEFLATED)
print("zip", hashlib.sha256(open("out.zip", "rb").read()).hexdigest()[:16])
with zipfile.ZipFile("out.zip") as z:
    print(z.namelist(), z.testzip(), [i.file_size for i in z.infolist()])
    z.extractall("unzipped")
print(sorted(os.path.join(d, f) for d, _, fs in os.walk("unzipped") for f in fs))
with tarfile.open("out.tar.gz", "w:gz") as t:
    for name, data in files.items():
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mtime = 1600000000
        info.mode = 0o644
        t.addfile(info, io.BytesIO(data))
with tarfile.open("out.tar.gz") as t:
    print("tar", [(m.name, m.size, m.mtime) for m in t.getmembers()])
    t.extractall("untarred")
print(open("untarred/dir/b.bin", "rb").read() == files["dir/b.bin"])
with tarfile.open("plain.tar", "w", format=tarfile.USTAR_FORMAT) as t:
    info = tarfile.TarInfo("x")
    info.size = 3
    info.mtime = 0
    t.addfile(info, io.BytesIO(b"xyz"))
print("ustar", os.path.getsize("plain.tar"), hashlib.md5(open("plain.tar", "rb").read()).hexdigest())
