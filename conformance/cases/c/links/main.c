// Hard and symbolic links, readlink, lstat, utimensat and fchmod.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void) {
    int fd = open("target.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    write(fd, "target\n", 7);
    fchmod(fd, 0640);
    close(fd);
    printf("link %d\n", link("target.txt", "hard.txt"));
    printf("symlink %d\n", symlink("target.txt", "soft.txt"));
    struct stat st;
    stat("target.txt", &st);
    printf("nlink %ld mode %o\n", (long)st.st_nlink, st.st_mode & 0777);
    lstat("soft.txt", &st);
    printf("soft is a link: %d\n", S_ISLNK(st.st_mode));
    char buf[64];
    ssize_t n = readlink("soft.txt", buf, sizeof buf - 1);
    buf[n < 0 ? 0 : n] = 0;
    printf("readlink %s\n", buf);
    struct timespec ts[2] = {{1000000000, 0}, {1234567890, 0}};
    utimensat(AT_FDCWD, "target.txt", ts, 0);
    stat("hard.txt", &st);
    printf("mtime via the hard link %ld\n", (long)st.st_mtime);
    printf("renameat2 noreplace: %d\n", renameat2(AT_FDCWD, "hard.txt", AT_FDCWD, "target.txt", RENAME_NOREPLACE));
    return 0;
}
