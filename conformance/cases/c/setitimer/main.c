// ITIMER_REAL every 20 ms: five SIGALRMs counted, waiting with sigsuspend.
// ITIMER_PROF fires on CPU time spent in a busy loop. A refused setitimer
// ends the program at once instead of waiting forever.
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>

static volatile sig_atomic_t alarms, profs;

static void onAlarm(int sig) { alarms++; }
static void onProf(int sig) { profs++; }

int main(void) {
    signal(SIGALRM, onAlarm);
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGALRM);
    sigprocmask(SIG_BLOCK, &block, &old);
    struct itimerval it = {{0, 20000}, {0, 20000}};
    if (setitimer(ITIMER_REAL, &it, NULL) != 0) {
        perror("setitimer ITIMER_REAL");
        return 1;
    }
    while (alarms < 5)
        sigsuspend(&old);
    struct itimerval off = {0};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("alarms %d\n", (int)alarms);

    signal(SIGPROF, onProf);
    struct itimerval prof = {{0, 10000}, {0, 10000}};
    if (setitimer(ITIMER_PROF, &prof, NULL) != 0) {
        perror("setitimer ITIMER_PROF");
        return 1;
    }
    volatile unsigned long spin = 0;
    while (profs < 3)
        spin++;
    setitimer(ITIMER_PROF, &off, NULL);
    struct itimerval now;
    getitimer(ITIMER_PROF, &now);
    printf("profs >= 3: %d, disarmed: %d\n", profs >= 3, now.it_value.tv_usec == 0);
    return 0;
}
