import grp
import os
import pwd
import shutil
import tarfile

os.makedirs("src/a", exist_ok=True)
for p in ("src/one.txt", "src/a/two.txt"):
    with open(p, "w") as f:
        f.write(p * 100)
name = shutil.make_archive("arch", "gztar", root_dir="src")
print("archive", os.path.basename(name))
shutil.unpack_archive(name, "unpacked")
print("unpacked", sorted(os.path.relpath(os.path.join(d, f), "unpacked") for d, _, fs in os.walk("unpacked") for f in fs))
with tarfile.open("files.tar", "w") as t:
    t.add("src", arcname="src")
with tarfile.open("files.tar") as t:
    print("members", [(m.name, m.size, m.isdir()) for m in t.getmembers()])
    print("owner fields", all(isinstance(m.uname, str) and isinstance(m.gname, str) for m in t.getmembers()))
for lookup, key in ((pwd.getpwuid, os.getuid()), (grp.getgrgid, os.getgid())):
    try:
        lookup(key)
    except KeyError:
        pass
    print(lookup.__name__, "answered")
try:
    pwd.getpwnam("no-such-user-here")
except KeyError:
    print("getpwnam: no such user")
print("root", pwd.getpwuid(0).pw_name, grp.getgrgid(0).gr_name)
