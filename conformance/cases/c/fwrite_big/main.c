// One large fwrite, then many small ones through a big setvbuf buffer.
#include <stdio.h>
#include <string.h>

static char block[300000];
static char vbuf[1 << 20];

int main(void) {
    setvbuf(stdout, vbuf, _IOFBF, sizeof vbuf);
    memset(block, 'x', sizeof block);
    for (size_t i = 99; i < sizeof block; i += 100)
        block[i] = '\n';
    fwrite(block, 1, sizeof block, stdout);
    for (int i = 0; i < 20000; i++)
        fwrite("yz\n", 1, 3, stdout);
    return 0;
}
