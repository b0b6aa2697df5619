// alarm(1) with a handler and pause(); then alarm without a handler kills.
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static void onAlarm(int sig) { write(1, "ring\n", 5); }

int main(void) {
    signal(SIGALRM, onAlarm);
    alarm(1);
    pause();
    printf("after pause, alarm left: %u\n", alarm(0));
    fflush(stdout);
    signal(SIGALRM, SIG_DFL);
    alarm(1);
    for (;;)
        pause();
}
