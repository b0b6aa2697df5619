// An exception escaping a thread's function terminates the program.
#include <iostream>
#include <stdexcept>
#include <thread>

int main() {
    std::cout << "starting a thread" << std::endl;
    std::thread t([] { throw std::logic_error("escaped from the thread"); });
    t.join();
    std::cout << "not reached" << std::endl;
}
