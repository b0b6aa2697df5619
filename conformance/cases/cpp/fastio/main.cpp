// Fast iostreams: unsynced cout writes a large chunk at once (writev).
#include <iostream>
#include <string>
using namespace std;

int main() {
    ios::sync_with_stdio(false);
    cin.tie(nullptr);
    cout << string(100000, 'a') << '\n';
    return 0;
}
