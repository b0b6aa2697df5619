#ifndef PARSE_H
#define PARSE_H
long eval(const char *rpn);
#endif
