#include "version.h"
#include <stdio.h>

int square(int);
int cube(int);

int main(void) {
    printf("version %s: %d %d\n", VERSION, square(7), cube(3));
    return 0;
}
