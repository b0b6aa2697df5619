// Slow stdio: scanf one number at a time, printf the sum and the count.
#include <stdio.h>

int main(void) {
    long long x, sum = 0;
    int n = 0;
    while (scanf("%lld", &x) == 1) {
        sum += x;
        n++;
    }
    printf("%d numbers, sum %lld\n", n, sum);
    return 0;
}
