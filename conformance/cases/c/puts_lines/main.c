// Line by line with puts and an explicit fflush after each: many small writes.
#include <stdio.h>

int main(void) {
    char line[32];
    for (int i = 1; i <= 3000; i++) {
        snprintf(line, sizeof line, "line %d", i);
        puts(line);
        fflush(stdout);
    }
    return 0;
}
