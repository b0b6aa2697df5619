// std::system runs a shell command: a process.
#include <cstdlib>
#include <iostream>

int main() {
    std::cout << "calling system" << std::endl;
    int rc = std::system("echo hello from sh; exit 3");
    std::cout << "status " << WEXITSTATUS(rc) << std::endl;
}
