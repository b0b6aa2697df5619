// A null pointer write: SIGSEGV, no core.
#include <stdio.h>

int main(int argc, char **argv) {
    volatile int *p = (int *)(long)(argc - 1);
    printf("before\n");
    fflush(stdout);
    *p = 1;
    printf("after\n");
    return 0;
}
