#define VALUE 41
