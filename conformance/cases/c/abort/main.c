// abort() after output: the buffered stdout is lost, SIGABRT ends the program.
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    printf("flushed\n");
    fflush(stdout);
    printf("lost in the buffer\n");
    fprintf(stderr, "about to abort\n");
    abort();
}
