// Files and directories in the working directory: mkdir, fopen, rename,
// readdir (sorted), stat, chmod, access, unlink, rmdir.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int cmp(const void *a, const void *b) { return strcmp(*(char **)a, *(char **)b); }

int main(void) {
    mkdir("d", 0755);
    mkdir("d/sub", 0700);
    for (int i = 0; i < 5; i++) {
        char name[32];
        snprintf(name, sizeof name, "d/f%d.txt", 4 - i);
        FILE *f = fopen(name, "w");
        fprintf(f, "file %d\n", i);
        fclose(f);
    }
    rename("d/f0.txt", "d/sub/moved.txt");
    DIR *dir = opendir("d");
    char *names[16];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL)
        if (e->d_name[0] != '.')
            names[n++] = strdup(e->d_name);
    closedir(dir);
    qsort(names, n, sizeof names[0], cmp);
    for (int i = 0; i < n; i++)
        printf("%s\n", names[i]);
    struct stat st;
    stat("d/sub/moved.txt", &st);
    printf("moved: %ld bytes, regular %d\n", (long)st.st_size, S_ISREG(st.st_mode));
    chmod("d/f1.txt", 0400);
    stat("d/f1.txt", &st);
    printf("mode %o, readable %d, executable %d\n", st.st_mode & 0777, access("d/f1.txt", R_OK) == 0,
           access("d/f1.txt", X_OK) == 0);
    printf("rmdir non-empty: %d\n", rmdir("d/sub"));
    unlink("d/sub/moved.txt");
    printf("rmdir empty: %d\n", rmdir("d/sub"));
    char cwd[256];
    printf("cwd %s\n", getcwd(cwd, sizeof cwd));
    return 0;
}
