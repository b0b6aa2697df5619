// printf's conversions: integers, floating point, widths, strings.
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

int main(void) {
    printf("[%d] [%5d] [%-5d] [%05d] [%+d]\n", 42, 42, 42, 42, 42);
    printf("[%u] [%x] [%X] [%o] [%#x]\n", 4000000000u, 255, 255, 8, 255);
    printf("[%lld] [%" PRId64 "] [%zu]\n", -9223372036854775807LL - 1, (int64_t)1 << 40, sizeof(long));
    printf("[%f] [%.3f] [%10.2f] [%e] [%g] [%g]\n", M_PI, M_PI, -M_PI, 12345.678, 0.0001, 1e20);
    printf("[%a] [%.0f] [%.0f] [%f] [%f]\n", 1.0, 0.5, 1.5, INFINITY, -NAN);
    printf("[%s] [%10s] [%-10s] [%.3s] [%c]\n", "abc", "abc", "abc", "abcdef", 'z');
    printf("[%%] [%5.1Lf]\n", 2.25L);
    return 0;
}
