#include "common.h"
#include <stdio.h>
int b(void);
int main(void) {
    printf("%d\n", VALUE + b());
    return 0;
}
