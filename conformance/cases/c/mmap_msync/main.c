// A file in the working directory mapped shared, written through the
// mapping, msync'd and read back with read(); an anonymous mapping grown
// with mremap and protected with mprotect.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void) {
    int fd = open("data.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, 8192) != 0) {
        perror("setup");
        return 1;
    }
    char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    strcpy(m, "written through the mapping");
    strcpy(m + 4096, "second page");
    if (msync(m, 8192, MS_SYNC) != 0)
        perror("msync");
    munmap(m, 8192);
    char buf[64] = {0};
    pread(fd, buf, 27, 0);
    printf("%s\n", buf);
    pread(fd, buf, 11, 4096);
    buf[11] = 0;
    printf("%s\n", buf);
    close(fd);

    char *a = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    a[0] = 'A';
    a = mremap(a, 4096, 1 << 20, MREMAP_MAYMOVE);
    a[(1 << 20) - 1] = 'Z';
    madvise(a, 1 << 20, MADV_DONTNEED);
    printf("after DONTNEED: %d %d\n", a[0], a[(1 << 20) - 1]);
    printf("mprotect: %d\n", mprotect(a, 4096, PROT_READ));
    munmap(a, 1 << 20);
    return 0;
}
