// A static C++ binary with iostreams, threads and exceptions.
#include <iostream>
#include <stdexcept>
#include <thread>
#include <vector>
using namespace std;

int main() {
    vector<int> r(4);
    vector<thread> ts;
    for (int i = 0; i < 4; i++)
        ts.emplace_back([&r, i] { r[i] = i * i; });
    for (auto &t : ts)
        t.join();
    for (int x : r)
        cout << x << ' ';
    cout << '\n';
    try {
        throw invalid_argument("static unwinding works");
    } catch (const exception &e) {
        cout << e.what() << '\n';
    }
    return 0;
}
