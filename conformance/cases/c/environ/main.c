// The task environment: exactly PATH, HOME, TMPDIR and LANG, and the
// working directory is HOME.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static int cmp(const void *a, const void *b) { return strcmp(*(char **)a, *(char **)b); }

int main(int argc, char **argv) {
    int n = 0;
    while (environ[n])
        n++;
    qsort(environ, n, sizeof environ[0], cmp);
    for (int i = 0; i < n; i++)
        printf("%s\n", environ[i]);
    char cwd[512];
    getcwd(cwd, sizeof cwd);
    printf("cwd is HOME: %d\n", strcmp(cwd, getenv("HOME")) == 0);
    printf("argv[0] %s, argc %d, argv[1] %s\n", argv[0], argc, argc > 1 ? argv[1] : "-");
    return 0;
}
