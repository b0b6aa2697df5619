// system() starts /bin/sh: fine for a build tool, not for a submission.
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    fflush(stdout);
    int rc = system("echo from the shell");
    printf("system returned %d\n", rc);
    return 0;
}
