import resource

data = [bytearray(1 << 20) for _ in range(20)]
ru = resource.getrusage(resource.RUSAGE_SELF)
print("self", ru.ru_maxrss > 20000, ru.ru_utime >= 0, ru.ru_stime >= 0, ru.ru_minflt > 0)
ch = resource.getrusage(resource.RUSAGE_CHILDREN)
print("children", ch.ru_utime >= 0, ch.ru_maxrss >= 0)
th = resource.getrusage(resource.RUSAGE_THREAD)
print("thread", th.ru_utime >= 0)
for name in ("RLIMIT_STACK", "RLIMIT_NOFILE", "RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_CORE"):
    soft, hard = resource.getrlimit(getattr(resource, name))
    print(name, soft <= hard or hard == resource.RLIM_INFINITY)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 64), hard))
print("nofile", resource.getrlimit(resource.RLIMIT_NOFILE)[0] <= 64)
resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
print("core", resource.getrlimit(resource.RLIMIT_CORE)[0])
print("pagesize", resource.getpagesize())
