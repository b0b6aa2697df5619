// Fast input: read all of stdin with fread in large blocks, parse by hand.
#include <stdio.h>
#include <stdlib.h>

static char buf[1 << 16];

int main(void) {
    unsigned long long sum = 0, n = 0, cur = 0;
    int in = 0;
    size_t len;
    while ((len = fread(buf, 1, sizeof buf, stdin)) > 0) {
        for (size_t i = 0; i < len; i++) {
            char c = buf[i];
            if (c >= '0' && c <= '9') {
                cur = cur * 10 + (c - '0');
                in = 1;
            } else if (in) {
                sum += cur;
                n++;
                cur = 0;
                in = 0;
            }
        }
    }
    if (in) {
        sum += cur;
        n++;
    }
    printf("%llu %llu\n", n, sum);
    return 0;
}
