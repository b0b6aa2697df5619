// A static binary with threads.
#include <pthread.h>
#include <stdio.h>

static int out[3];

static void *sq(void *arg) {
    int i = (int)(long)arg;
    out[i] = (i + 1) * (i + 1);
    return NULL;
}

int main(void) {
    pthread_t t[3];
    for (long i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, sq, (void *)i);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("%d %d %d\n", out[0], out[1], out[2]);
    return 0;
}
