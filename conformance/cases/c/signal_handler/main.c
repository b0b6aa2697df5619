// Handled signals: raise(SIGUSR1), a SIGSEGV handler on an alternate stack.
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile sig_atomic_t got;

static void onUsr1(int sig) { got = sig; }

static void onSegv(int sig) {
    static const char msg[] = "caught SIGSEGV on the alternate stack\n";
    write(1, msg, sizeof msg - 1);
    _exit(7);
}

int main(void) {
    signal(SIGUSR1, onUsr1);
    raise(SIGUSR1);
    printf("got signal %d\n", got);

    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    sigprocmask(SIG_BLOCK, &set, &old);
    raise(SIGUSR2);
    sigset_t pending;
    sigpending(&pending);
    printf("SIGUSR2 pending: %d\n", sigismember(&pending, SIGUSR2));
    signal(SIGUSR2, SIG_IGN);
    sigprocmask(SIG_SETMASK, &old, NULL);
    fflush(stdout);

    stack_t ss = {.ss_sp = malloc(SIGSTKSZ), .ss_size = SIGSTKSZ};
    sigaltstack(&ss, NULL);
    struct sigaction sa = {.sa_handler = onSegv, .sa_flags = SA_ONSTACK};
    sigaction(SIGSEGV, &sa, NULL);
    *(volatile int *)0 = 1;
    return 0;
}
