// Output on both streams, interleaved, then a non-zero exit status.
#include <stdio.h>

int main(void) {
    for (int i = 0; i < 5; i++) {
        printf("out %d\n", i);
        fprintf(stderr, "err %d\n", i);
    }
    perror("a message with errno 0");
    fputs("wrong answer\n", stderr);
    return 3;
}
