#include <ctype.h>

void upcase(char *s) {
    for (; *s; s++)
        *s = toupper((unsigned char)*s);
}
