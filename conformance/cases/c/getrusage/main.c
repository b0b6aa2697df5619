// Resource usage and times after some work: only sanity is printed.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/times.h>

int main(void) {
    size_t n = 50 << 20;
    char *p = malloc(n);
    memset(p, 7, n);
    volatile unsigned long s = 0;
    for (size_t i = 0; i < n; i += 64)
        s += p[i];
    struct rusage ru;
    printf("getrusage %d\n", getrusage(RUSAGE_SELF, &ru));
    printf("maxrss >= 50 MiB: %d\n", ru.ru_maxrss >= 50 * 1024);
    printf("utime+stime > 0: %d\n", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec > 0);
    struct tms t;
    printf("times ok: %d\n", times(&t) != (clock_t)-1);
    struct rlimit rl;
    getrlimit(RLIMIT_STACK, &rl);
    printf("stack limit at least 256 MiB: %d\n", rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= 256UL << 20);
    printf("checksum %lu\n", (unsigned long)s);
    free(p);
    return 0;
}
