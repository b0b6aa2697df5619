void greet(const char *);

int main(void) {
    greet("judge");
    return 0;
}
