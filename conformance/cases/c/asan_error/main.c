// ASan finds a heap buffer overflow: the report goes to stderr and the
// program exits 1. Symbolizing would start a process (addr2line or
// llvm-symbolizer), so it is off; addresses and pids are normalized.
#include <stdio.h>
#include <stdlib.h>

const char *__asan_default_options(void) { return "detect_leaks=0:symbolize=0"; }

int main(int argc, char **argv) {
    int *a = malloc(8 * sizeof *a);
    printf("writing past the end\n");
    fflush(stdout);
    a[7 + argc] = 1;
    free(a);
    return 0;
}
