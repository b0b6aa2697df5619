// 200 MB of vectors: allocation, nth_element of 25 million ints, reserve/shrink.
#include <algorithm>
#include <iostream>
#include <vector>
using namespace std;

int main() {
    vector<int> v(25000000);
    unsigned s = 99;
    for (auto &x : v) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        x = s % 1000000;
    }
    vector<int> w = v;
    nth_element(w.begin(), w.begin() + w.size() / 2, w.end());
    cout << "median " << w[w.size() / 2] << '\n';
    w.clear();
    w.shrink_to_fit();
    long long sum = 0;
    for (int x : v)
        sum += x;
    cout << "sum " << sum << '\n';
    return 0;
}
