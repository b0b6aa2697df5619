// fork, the child exits 5, the parent waits and reports; execvp of echo.
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(5);
    int st;
    waitpid(pid, &st, 0);
    printf("child exited %d\n", WEXITSTATUS(st));
    fflush(stdout);
    if (fork() == 0) {
        char *argv[] = {"echo", "exec'd echo", NULL};
        execvp("echo", argv);
        _exit(127);
    }
    wait(&st);
    printf("echo exited %d\n", WEXITSTATUS(st));
    return 0;
}
