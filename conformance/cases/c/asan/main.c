// Built with ASan and UBSan, a correct program runs clean. LeakSanitizer is
// off: it stops the world with ptrace, which no sandbox profile allows.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *__asan_default_options(void) { return "detect_leaks=0"; }

int main(void) {
    int n = 100000;
    int *a = malloc(n * sizeof *a);
    for (int i = 0; i < n; i++)
        a[i] = i * 3 % 1001;
    long s = 0;
    for (int i = 0; i < n; i++)
        s += a[i];
    char buf[64];
    snprintf(buf, sizeof buf, "%ld", s);
    printf("%s %zu\n", buf, strlen(buf));
    free(a);
    return 0;
}
