// A static binary: no loader, libc linked in.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) { return strcmp(*(char **)a, *(char **)b); }

int main(void) {
    char *w[] = {"static", "binaries", "need", "no", "loader"};
    qsort(w, 5, sizeof w[0], cmp);
    for (int i = 0; i < 5; i++)
        printf("%s\n", w[i]);
    char *p = malloc(1 << 20);
    memset(p, 1, 1 << 20);
    printf("%d\n", p[12345]);
    free(p);
    return 0;
}
