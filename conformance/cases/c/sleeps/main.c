// sleep, usleep, nanosleep and clock_nanosleep TIMER_ABSTIME.
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int main(void) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    usleep(30000);
    struct timespec d = {0, 30000000};
    nanosleep(&d, NULL);
    struct timespec until = a;
    until.tv_nsec += 100000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL);
    printf("sleep(0) = %u\n", sleep(0));
    sleep(1);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double t = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
    printf("slept at least 1.1 s: %d, less than 5 s: %d\n", t >= 1.1, t < 5);
    return 0;
}
