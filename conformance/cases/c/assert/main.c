// A failed assert prints the expression and raises SIGABRT.
#include <assert.h>
#include <stdio.h>

static int twice(int x) { return x + x + (x == 21); }

int main(void) {
    printf("checking\n");
    fflush(stdout);
    assert(twice(21) == 42);
    return 0;
}
