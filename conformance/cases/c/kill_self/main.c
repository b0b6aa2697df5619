// kill(getpid(), SIGTERM) with no handler: the program dies of SIGTERM.
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
    printf("terminating myself\n");
    fflush(stdout);
    kill(getpid(), SIGTERM);
    pause();
    return 0;
}
