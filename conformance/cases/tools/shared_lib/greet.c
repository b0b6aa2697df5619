#include <stdio.h>

void greet(const char *who) { printf("hello, %s, from a shared library\n", who); }
