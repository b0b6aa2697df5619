// A recursion 2 million calls deep (about 200 MB of stack): judges give the
// stack as much room as memory.
#include <stdio.h>

static long depth(long n, volatile char *prev) {
    volatile char pad[64];
    pad[0] = (char)n;
    if (n == 0)
        return pad[0] + (prev != 0);
    return depth(n - 1, pad) + 1;
}

int main(void) {
    printf("%ld\n", depth(2000000, 0));
    return 0;
}
