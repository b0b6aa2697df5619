// The clocks: monotonic ones move forward across a sleep, the CPU-time
// clocks count work, the real-time clock is after 2020.
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

static double secs(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void) {
    double m0 = secs(CLOCK_MONOTONIC), b0 = secs(CLOCK_BOOTTIME), r0 = secs(CLOCK_MONOTONIC_RAW);
    struct timespec d = {0, 50000000};
    nanosleep(&d, NULL);
    printf("monotonic >= 50ms: %d\n", secs(CLOCK_MONOTONIC) - m0 >= 0.049);
    printf("boottime, raw advance: %d %d\n", secs(CLOCK_BOOTTIME) > b0, secs(CLOCK_MONOTONIC_RAW) > r0);
    volatile double x = 0;
    for (int i = 0; i < 20000000; i++)
        x += i * 0.5;
    printf("process cpu > 0: %d, thread cpu > 0: %d\n", secs(CLOCK_PROCESS_CPUTIME_ID) > 0, secs(CLOCK_THREAD_CPUTIME_ID) > 0);
    printf("realtime after 2020: %d, coarse: %d\n", secs(CLOCK_REALTIME) > 1577836800, secs(CLOCK_REALTIME_COARSE) > 1577836800);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    printf("gettimeofday, time agree: %d\n", (long)tv.tv_sec - (long)time(NULL) <= 1);
    struct timespec res;
    clock_getres(CLOCK_MONOTONIC, &res);
    printf("resolution <= 1ms: %d\n", res.tv_sec == 0 && res.tv_nsec <= 1000000);
    printf("clock() >= 0: %d\n", clock() >= 0);
    return 0;
}
