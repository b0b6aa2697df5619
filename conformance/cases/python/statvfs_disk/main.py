import os
import shutil
import stat

st = os.statvfs(".")
print("statvfs", st.f_bsize > 0, st.f_frsize > 0, st.f_blocks >= st.f_bfree >= 0, st.f_namemax >= 255)
du = shutil.disk_usage(".")
print("disk_usage", du.total >= du.used >= 0, du.free >= 0)
with open("f.txt", "w") as f:
    f.write("x" * 1234)
s = os.stat("f.txt")
print("stat", s.st_size, stat.S_ISREG(s.st_mode), s.st_nlink, s.st_mtime > 0, s.st_blocks >= 0)
print("dir", stat.S_ISDIR(os.stat(".").st_mode), stat.S_ISDIR(os.lstat("/").st_mode))
fs = os.fstat(0)
print("stdin", stat.S_ISFIFO(fs.st_mode) or stat.S_ISREG(fs.st_mode) or stat.S_ISCHR(fs.st_mode))
print("access", os.access("f.txt", os.R_OK | os.W_OK), os.access("/usr/bin/python3", os.X_OK), os.access("/nonexistent", os.F_OK))
print("samefile", os.path.samefile("f.txt", "./f.txt"))
print("pathconf", os.pathconf(".", "PC_NAME_MAX") >= 255, os.fpathconf(0, "PC_PIPE_BUF") >= 512 if stat.S_ISFIFO(fs.st_mode) else True)
