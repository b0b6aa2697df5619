// A pipe inside the process: a writer thread, the main thread reading;
// then poll() and select() on a pipe.
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/select.h>
#include <unistd.h>

static int fds[2];

static void *writer(void *arg) {
    char line[32];
    for (int i = 0; i < 1000; i++) {
        int n = snprintf(line, sizeof line, "%d\n", i);
        write(fds[1], line, n);
    }
    close(fds[1]);
    return NULL;
}

int main(void) {
    pipe(fds);
    pthread_t t;
    pthread_create(&t, NULL, writer, NULL);
    char buf[4096];
    long total = 0, lines = 0;
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) {
        total += n;
        for (ssize_t i = 0; i < n; i++)
            lines += buf[i] == '\n';
    }
    pthread_join(t, NULL);
    close(fds[0]);
    printf("%ld bytes, %ld lines\n", total, lines);

    int p[2];
    pipe(p);
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    printf("poll empty: %d\n", poll(&pf, 1, 10));
    write(p[1], "x", 1);
    printf("poll ready: %d revents POLLIN %d\n", poll(&pf, 1, 1000), (pf.revents & POLLIN) != 0);
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(p[0], &rs);
    struct timeval tv = {1, 0};
    printf("select: %d\n", select(p[0] + 1, &rs, NULL, NULL, &tv));
    return 0;
}
