#include "parse.h"
#include "stack.h"
#include <stdio.h>

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        printf("%s = %ld (depth %d)\n", argv[i], eval(argv[i]), depth());
    return 0;
}
