// Fast iostreams both ways: a million numbers in, sorted, large output
// built in a string and written in one go.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>
using namespace std;

int main() {
    ios::sync_with_stdio(false);
    cin.tie(nullptr);
    vector<long long> v;
    long long x;
    while (cin >> x)
        v.push_back(x * 7919 % 1000003);
    sort(v.begin(), v.end());
    string out;
    for (size_t i = 0; i < v.size(); i += 997)
        out += to_string(v[i]) + '\n';
    cout << v.size() << '\n' << out;
    return 0;
}
