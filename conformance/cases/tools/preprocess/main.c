#define SQUARE(x) ((x) * (x))
#define STR(x) #x
#define XSTR(x) STR(x)
int values[] = {SQUARE(3), SQUARE(1 + 1)};
const char *line = XSTR(__LINE__);
#if __STDC_VERSION__ >= 201112L
const char *std = "C11 or later";
#endif
