// qsort a million pseudo-random numbers (fixed seed), bsearch some.
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

int main(void) {
    enum { N = 1000000 };
    static unsigned a[N];
    unsigned s = 12345;
    for (int i = 0; i < N; i++) {
        s = s * 1103515245u + 12345u;
        a[i] = s >> 8;
    }
    qsort(a, N, sizeof a[0], cmp);
    printf("min %u max %u median %u\n", a[0], a[N - 1], a[N / 2]);
    int found = 0;
    for (unsigned k = 0; k < 100000; k++) {
        unsigned key = k * 167;
        found += bsearch(&key, a, N, sizeof a[0], cmp) != NULL;
    }
    printf("found %d\n", found);
    srand(7);
    int r = rand();
    srand(7);
    printf("rand repeats: %d\n", r == rand());
    return 0;
}
