// popen() starts /bin/sh to sort: a process, refused to a submission.
#include <stdio.h>

int main(void) {
    FILE *p = popen("sort -n", "w");
    if (!p) {
        perror("popen");
        return 1;
    }
    fprintf(p, "3\n1\n2\n");
    int rc = pclose(p);
    printf("pclose %d\n", rc);
    return 0;
}
