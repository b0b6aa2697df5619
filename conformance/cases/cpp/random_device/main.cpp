// std::random_device seeds (values not printed); a fixed-seed mt19937 and
// distributions give a deterministic sequence.
#include <iostream>
#include <random>
using namespace std;

int main() {
    random_device rd;
    unsigned a = rd(), b = rd();
    cout << "random_device gave two values, entropy >= 0: " << (rd.entropy() >= 0) << " " << (a != b || a == b) << '\n';
    mt19937 gen(2024);
    for (int i = 0; i < 5; i++)
        cout << gen() << ' ';
    cout << '\n';
    mt19937_64 g64(7);
    uniform_int_distribution<int> d(1, 6);
    for (int i = 0; i < 10; i++)
        cout << d(g64);
    cout << '\n';
    seed_seq seq{1, 2, 3};
    minstd_rand m(seq);
    cout << m() << '\n';
    return 0;
}
