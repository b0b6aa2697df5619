// sysconf and friends: page size, CPUs (only > 0), open files, user ids.
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <sys/utsname.h>
#include <unistd.h>

int main(void) {
    printf("page size %ld\n", sysconf(_SC_PAGESIZE));
    printf("cpus online > 0: %d\n", sysconf(_SC_NPROCESSORS_ONLN) > 0);
    cpu_set_t set;
    printf("sched_getaffinity %d, some cpu: %d\n", sched_getaffinity(0, sizeof set, &set), CPU_COUNT(&set) > 0);
    printf("open max >= 256: %d\n", sysconf(_SC_OPEN_MAX) >= 256);
    printf("clock ticks %ld\n", sysconf(_SC_CLK_TCK));
    struct utsname u;
    printf("uname %d sysname %s\n", uname(&u), u.sysname);
    printf("not root: %d, uid==euid: %d, gid==egid: %d\n", getuid() != 0, getuid() == geteuid(), getgid() == getegid());
    printf("getpid > 0: %d, getppid >= 0: %d\n", getpid() > 0, getppid() >= 0);
    printf("sched_yield %d\n", sched_yield());
    return 0;
}
