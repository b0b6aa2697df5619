// The locale from LANG (C.UTF-8): multibyte conversions, wide output,
// character classes; then the C locale.
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <wctype.h>

int main(void) {
    const char *l = setlocale(LC_ALL, "");
    printf("locale: %s\n", l ? l : "(null)");
    const char *s = "héllo wörld ✓";
    wchar_t w[64];
    size_t n = mbstowcs(w, s, 64);
    printf("bytes %zu, characters %zu\n", strlen(s), n);
    int upper = 0;
    for (size_t i = 0; i < n; i++)
        upper += iswalpha(w[i]) != 0;
    printf("letters %d\n", upper);
    char back[64];
    wcstombs(back, w, sizeof back);
    printf("round trip: %s\n", back);
    printf("towupper: %lc\n", (wint_t)towupper(L'é'));
    printf("decimal point: %s\n", localeconv()->decimal_point);
    setlocale(LC_ALL, "C");
    printf("C: %s %d\n", setlocale(LC_ALL, NULL), (int)mbstowcs(NULL, "abc", 0));
    return 0;
}
