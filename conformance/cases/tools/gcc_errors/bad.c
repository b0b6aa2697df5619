#include <stdio.h>

int main(void) {
    int x = "not a number";
    printf("%d\n", x)
    return undefined_name;
}
