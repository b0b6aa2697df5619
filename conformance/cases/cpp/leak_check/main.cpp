// ASan with its defaults: LeakSanitizer runs at exit and finds a leak. It
// stops the world with a tracer (clone without CLONE_THREAD, then ptrace):
// a submission may do neither.
#include <iostream>

int main() {
    int *leak = new int[100];
    leak[0] = 1;
    std::cout << "leaking " << leak[0] << std::endl;
    leak = nullptr;
    return 0;
}
