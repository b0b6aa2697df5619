#include "stack.h"

static long items[64];
static int n;

void push(long v) { items[n++] = v; }
long pop(void) { return items[--n]; }
int depth(void) { return n; }
