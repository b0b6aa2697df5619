// The judges' fast reader: getchar_unlocked, and putchar_unlocked output.
#include <stdio.h>

static int readInt(int *out) {
    int c = getchar_unlocked(), neg = 0, v = 0;
    while (c != EOF && c != '-' && (c < '0' || c > '9'))
        c = getchar_unlocked();
    if (c == EOF)
        return 0;
    if (c == '-') {
        neg = 1;
        c = getchar_unlocked();
    }
    for (; c >= '0' && c <= '9'; c = getchar_unlocked())
        v = v * 10 + (c - '0');
    *out = neg ? -v : v;
    return 1;
}

static void writeInt(long long v) {
    char s[24];
    int n = 0;
    if (v < 0) {
        putchar_unlocked('-');
        v = -v;
    }
    do
        s[n++] = '0' + v % 10;
    while ((v /= 10) > 0);
    while (n > 0)
        putchar_unlocked(s[--n]);
    putchar_unlocked('\n');
}

int main(void) {
    int x;
    long long acc = 0, i = 0;
    while (readInt(&x)) {
        acc += x;
        if (++i % 50000 == 0)
            writeInt(acc);
    }
    writeInt(acc);
    return 0;
}
