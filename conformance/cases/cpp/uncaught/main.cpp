// An uncaught exception: std::terminate prints its what() and aborts.
#include <iostream>
#include <stdexcept>

int main() {
    std::cout << "before the throw" << std::endl;
    throw std::runtime_error("boom: wrong answer on test 3");
}
