#include <stdio.h>

long dot(const long *, const long *, int);
void upcase(char *);

int main(void) {
    long a[] = {1, 2, 3}, b[] = {4, 5, 6};
    char s[] = "static library";
    upcase(s);
    printf("%ld %s\n", dot(a, b, 3), s);
    return 0;
}
