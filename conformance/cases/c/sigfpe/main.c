// Integer division by zero: SIGFPE.
#include <stdio.h>

int main(int argc, char **argv) {
    volatile int zero = argc - 1;
    printf("dividing\n");
    fflush(stdout);
    printf("%d\n", 10 / zero);
    return 0;
}
