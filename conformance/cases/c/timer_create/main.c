// POSIX timers: a periodic CLOCK_MONOTONIC timer signalling SIGRTMIN,
// waited for with sigwaitinfo; timer_gettime and timer_getoverrun.
#include <signal.h>
#include <stdio.h>
#include <time.h>

int main(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN);
    sigprocmask(SIG_BLOCK, &set, NULL);
    struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN};
    ev.sigev_value.sival_int = 77;
    timer_t t;
    if (timer_create(CLOCK_MONOTONIC, &ev, &t) != 0) {
        perror("timer_create");
        return 1;
    }
    struct itimerspec its = {{0, 10000000}, {0, 10000000}};
    if (timer_settime(t, 0, &its, NULL) != 0) {
        perror("timer_settime");
        return 1;
    }
    for (int i = 0; i < 5; i++) {
        siginfo_t si;
        int sig = sigwaitinfo(&set, &si);
        printf("tick %d: signal is SIGRTMIN %d, value %d, code SI_TIMER %d\n", i, sig == SIGRTMIN,
               si.si_value.sival_int, si.si_code == SI_TIMER);
    }
    struct itimerspec cur;
    timer_gettime(t, &cur);
    printf("interval %ld ns, overrun >= 0: %d\n", cur.it_interval.tv_nsec, timer_getoverrun(t) >= 0);
    timer_delete(t);
    return 0;
}
