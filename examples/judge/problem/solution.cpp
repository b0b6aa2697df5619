// The submission the judge example grades.
//
// The problem: input.txt holds two integers a and b, |a|, |b| <= 2*10^9;
// write a + b to output.txt.
//
// This submission is wrong on purpose, in one way per verdict, so that
// the verdict table shows each of them:
//   - the sum is an int: a wrong answer once it passes 2^31 - 1 (test 3);
//   - a = 0 makes it count up to b in a table of b numbers, 8 bytes each:
//     over the memory limit for a large b (test 4);
//   - a = b makes it wait for a number that never comes (test 5);
//   - a negative a indexes a table out of range: the exception aborts the
//     program (test 6).
#include <cstdio>
#include <vector>

int main() {
    FILE *in = fopen("input.txt", "r");
    long long a, b;
    if (!in || fscanf(in, "%lld %lld", &a, &b) != 2)
        return 1;
    int sum = a + b;
    if (a == 0) {
        std::vector<long long> table(b + 1);
        for (long long i = 0; i <= b; i++)
            table[i] = i;
        sum = table[b];
    }
    if (a == b) {
        unsigned long long x = a, steps = 0;
        while (x != 0) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            steps++;
        }
        sum += steps;
    }
    if (a < 0) {
        std::vector<int> small(10);
        sum += small.at(a);
    }
    FILE *out = fopen("output.txt", "w");
    if (!out)
        return 1;
    fprintf(out, "%d\n", sum);
    return fclose(out) != 0;
}
