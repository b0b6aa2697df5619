#ifndef STACK_H
#define STACK_H
void push(long v);
long pop(void);
int depth(void);
#endif
