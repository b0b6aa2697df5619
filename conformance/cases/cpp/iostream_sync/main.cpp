// Slow iostreams: synced with stdio, endl after every line (a flush each).
#include <iostream>
using namespace std;

int main() {
    int n;
    cin >> n;
    long long sum = 0;
    for (int i = 0; i < n; i++) {
        long long x;
        cin >> x;
        sum += x;
        cout << "prefix " << sum << endl;
    }
    cerr << "done" << endl;
    return 0;
}
