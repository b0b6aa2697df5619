// UBSan reports a signed overflow and an out-of-bounds index, and goes on.
#include <limits.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int big = INT_MAX - 1 + argc;
    int arr[4] = {1, 2, 3, 4};
    int k = big + 1;
    printf("overflowed to %d\n", k);
    int idx = 3 + argc;
    printf("arr[%d] read\n", idx + (arr[idx] & 0));
    return 0;
}
