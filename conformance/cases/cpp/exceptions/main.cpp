// Exceptions thrown and caught across frames, rethrown, nested, and a
// destructor run during unwinding.
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>
using namespace std;

struct Guard {
    string name;
    ~Guard() { cout << "unwound " << name << '\n'; }
};

struct JudgeError : runtime_error {
    int code;
    JudgeError(const string &m, int c) : runtime_error(m), code(c) {}
};

static int deep(int n) {
    Guard g{"level " + to_string(n)};
    if (n == 0)
        throw JudgeError("bottom reached", 7);
    return deep(n - 1) + 1;
}

int main() {
    try {
        deep(3);
    } catch (const JudgeError &e) {
        cout << "caught " << e.what() << " code " << e.code << '\n';
    }
    try {
        vector<int> v(3);
        v.at(10) = 1;
    } catch (const out_of_range &e) {
        cout << "out_of_range caught\n";
    }
    try {
        try {
            throw logic_error("inner");
        } catch (...) {
            throw_with_nested(runtime_error("outer"));
        }
    } catch (const exception &e) {
        cout << "outer: " << e.what() << '\n';
        try {
            rethrow_if_nested(e);
        } catch (const exception &in) {
            cout << "nested: " << in.what() << '\n';
        }
    }
    try {
        throw 42;
    } catch (int x) {
        cout << "int " << x << '\n';
    }
    return 0;
}
