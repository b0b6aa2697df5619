// printf and cout mixed while synced: the order is kept.
#include <cstdio>
#include <iostream>
using namespace std;

int main() {
    for (int i = 0; i < 5; i++) {
        printf("printf %d\n", i);
        cout << "cout " << i << '\n';
        puts("puts");
    }
    cout << flush;
    fprintf(stderr, "stderr via printf\n");
    cerr << "stderr via cerr\n";
    clog << "stderr via clog\n";
    return 0;
}
