// 300 MB allocated in many blocks and touched, freed, allocated again with
// calloc; realloc growth.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    enum { BLOCKS = 300 };
    char *b[BLOCKS];
    unsigned long sum = 0;
    for (int i = 0; i < BLOCKS; i++) {
        b[i] = malloc(1 << 20);
        memset(b[i], i & 0xff, 1 << 20);
    }
    for (int i = 0; i < BLOCKS; i++) {
        sum += (unsigned char)b[i][i * 3];
        free(b[i]);
    }
    printf("sum %lu\n", sum);
    int *z = calloc(50 << 20, sizeof(int) / 4 * 4);
    printf("calloc zero: %d\n", z[12345] == 0);
    free(z);
    char *r = NULL;
    size_t cap = 0;
    for (int i = 0; i < 16; i++) {
        cap = cap * 2 + 1024;
        r = realloc(r, cap);
        r[cap - 1] = 1;
    }
    printf("realloc to %zu\n", cap);
    free(r);
    return 0;
}
