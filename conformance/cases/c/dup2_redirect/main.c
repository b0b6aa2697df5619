// Redirect stdout into a file with dup2, write, restore, print the file;
// fcntl duplicates and flags.
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
    fflush(stdout);
    int saved = dup(1);
    int fd = open("log.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    close(fd);
    printf("this goes to the file\n");
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    int high = fcntl(1, F_DUPFD_CLOEXEC, 100);
    printf("F_DUPFD_CLOEXEC >= 100: %d, cloexec: %d\n", high >= 100, (fcntl(high, F_GETFD) & FD_CLOEXEC) != 0);
    char buf[64] = {0};
    int in = open("log.txt", O_RDONLY);
    read(in, buf, sizeof buf - 1);
    printf("file says: %s", buf);
    printf("O_RDONLY: %d\n", (fcntl(in, F_GETFL) & O_ACCMODE) == O_RDONLY);
    return 0;
}
