import os
import platform
import sys

print("pid", os.getpid() > 0, os.getppid() >= 0, os.getpid() != os.getppid())
print("uid", os.getuid() == os.geteuid(), os.getgid() == os.getegid())
print("resuid", len(set(os.getresuid())) == 1, len(set(os.getresgid())) == 1)
print("groups", isinstance(os.getgroups(), list))
print("pgrp", os.getpgrp() > 0, os.getpgid(0) == os.getpgrp(), os.getsid(0) > 0)
print("uname", os.uname().sysname, platform.system(), platform.machine() == os.uname().machine)
print("cpus", os.cpu_count() >= 1, len(os.sched_getaffinity(0)) >= 1)
print("priority", isinstance(os.getpriority(os.PRIO_PROCESS, 0), int))
os.umask(0o027)
print("umask", oct(os.umask(0o022)))
print("cwd", os.getcwd())
print("env", {k: os.environ.get(k) for k in ("PATH", "LANG", "HOME")})
print("executable", sys.executable, sys.version_info[:2], sys.implementation.name)
print("argv", sys.argv, sys.flags.optimize, sys.byteorder, sys.maxsize == 2 ** 63 - 1)
print("isatty", os.isatty(0), os.isatty(1), sys.stdin.isatty())
print("times", os.times().user >= 0, os.times().elapsed > 0)
