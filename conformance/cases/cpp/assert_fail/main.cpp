// assert in C++: the message names the function, then SIGABRT.
#include <cassert>
#include <iostream>
#include <vector>

static int checked(const std::vector<int> &v, size_t i) {
    assert(i < v.size() && "index in range");
    return v[i];
}

int main() {
    std::vector<int> v{1, 2, 3};
    std::cout << checked(v, 2) << std::endl;
    std::cout << checked(v, 3) << std::endl;
}
