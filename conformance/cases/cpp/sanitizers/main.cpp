// ASan and UBSan on STL code that is correct: a clean run. LSan is off
// (it stops the world with ptrace, which no profile allows).
#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <vector>
using namespace std;

extern "C" const char *__asan_default_options() { return "detect_leaks=0"; }

int main() {
    vector<string> words = {"delta", "alpha", "charlie", "bravo"};
    sort(words.begin(), words.end());
    map<string, size_t> len;
    for (auto &w : words)
        len[w] = w.size();
    for (auto &[w, n] : len)
        cout << w << ' ' << n << '\n';
    auto *p = new int[1000];
    for (int i = 0; i < 1000; i++)
        p[i] = i;
    cout << p[999] << '\n';
    delete[] p;
    return 0;
}
