// Four threads add into a shared counter under a mutex, then a barrier and
// per-thread results joined in order.
#include <pthread.h>
#include <stdio.h>

#define N 4
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t bar;
static long total;
static long partial[N];

static void *work(void *arg) {
    long id = (long)arg, s = 0;
    for (long i = id; i < 2000000; i += N)
        s += i % 7;
    partial[id] = s;
    pthread_mutex_lock(&mu);
    total += s;
    pthread_mutex_unlock(&mu);
    pthread_barrier_wait(&bar);
    return (void *)(id * 10);
}

int main(void) {
    pthread_t th[N];
    pthread_barrier_init(&bar, NULL, N);
    for (long i = 0; i < N; i++)
        pthread_create(&th[i], NULL, work, (void *)i);
    for (int i = 0; i < N; i++) {
        void *ret;
        pthread_join(th[i], &ret);
        printf("thread %d: %ld (returned %ld)\n", i, partial[i], (long)ret);
    }
    printf("total %ld\n", total);
    return 0;
}
