// read(2) straight from stdin until EOF: bytes and a checksum of 8 MB.
#include <stdio.h>
#include <unistd.h>

int main(void) {
    static char buf[1 << 17];
    unsigned long long total = 0, sum = 0;
    ssize_t n;
    while ((n = read(0, buf, sizeof buf)) > 0) {
        total += n;
        for (ssize_t i = 0; i < n; i++)
            sum = sum * 31 + (unsigned char)buf[i];
    }
    printf("%llu bytes, hash %llu, last read %zd\n", total, sum, n);
    return 0;
}
