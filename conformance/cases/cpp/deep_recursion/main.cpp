// A recursion 1 million frames deep in C++ (std::function frames): fine
// with a large stack.
#include <functional>
#include <iostream>
using namespace std;

int main() {
    function<long(long)> down = [&](long n) -> long { return n == 0 ? 0 : 1 + down(n - 1); };
    cout << down(1000000) << '\n';
    return 0;
}
