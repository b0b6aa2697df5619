// Writes, fsync, fdatasync, ftruncate, truncate, and stat of the sizes.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static long size(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

int main(void) {
    int fd = open("out.txt", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    for (int i = 0; i < 100; i++)
        write(fd, "0123456789", 10);
    printf("fsync %d fdatasync %d size %ld\n", fsync(fd), fdatasync(fd), size("out.txt"));
    printf("ftruncate %d size %ld\n", ftruncate(fd, 123), size("out.txt"));
    close(fd);
    printf("truncate %d size %ld\n", truncate("out.txt", 5000), size("out.txt"));
    FILE *f = fopen("out.txt", "r");
    fseek(f, 4999, SEEK_SET);
    printf("last byte %d\n", fgetc(f));
    fclose(f);
    sync();
    printf("unlink %d\n", unlink("out.txt"));
    return 0;
}
