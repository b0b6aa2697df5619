#include "parse.h"
#include "stack.h"
#include <ctype.h>
#include <stdlib.h>

long eval(const char *s) {
    while (*s) {
        if (isdigit((unsigned char)*s)) {
            char *end;
            push(strtol(s, &end, 10));
            s = end;
            continue;
        }
        if (*s != ' ') {
            long b = pop(), a = pop();
            push(*s == '+' ? a + b : *s == '-' ? a - b : a * b);
        }
        s++;
    }
    return pop();
}
