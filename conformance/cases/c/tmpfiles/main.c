// Temporary files: tmpfile(), mkstemp in $TMPDIR, mkdtemp; names are not
// printed.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void) {
    FILE *t = tmpfile();
    fputs("in a tmpfile\n", t);
    rewind(t);
    char line[64];
    fputs(fgets(line, sizeof line, t), stdout);
    fclose(t);
    const char *dir = getenv("TMPDIR");
    if (!dir)
        dir = "/tmp";
    printf("TMPDIR %s\n", dir);
    char path[256];
    snprintf(path, sizeof path, "%s/judgeXXXXXX", dir);
    int fd = mkstemp(path);
    printf("mkstemp ok: %d, in TMPDIR: %d\n", fd >= 0, strncmp(path, dir, strlen(dir)) == 0);
    write(fd, "abc", 3);
    close(fd);
    unlink(path);
    char d[256];
    snprintf(d, sizeof d, "%s/dirXXXXXX", dir);
    printf("mkdtemp ok: %d\n", mkdtemp(d) != NULL && rmdir(d) == 0);
    return 0;
}
