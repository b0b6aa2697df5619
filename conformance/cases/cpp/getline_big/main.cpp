// getline over a large input with a synced cin: count lines, words, bytes.
#include <iostream>
#include <sstream>
#include <string>
using namespace std;

int main() {
    string line;
    long lines = 0, words = 0, bytes = 0;
    while (getline(cin, line)) {
        lines++;
        bytes += line.size() + 1;
        istringstream is(line);
        string w;
        while (is >> w)
            words++;
    }
    cout << lines << ' ' << words << ' ' << bytes << '\n';
    return 0;
}
