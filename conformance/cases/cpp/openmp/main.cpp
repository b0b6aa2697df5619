// OpenMP in C++: parallel for over a vector, tasks, an atomic counter.
#include <iostream>
#include <omp.h>
#include <vector>
using namespace std;

static long fib(int n) {
    if (n < 20)
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    long a, b;
#pragma omp task shared(a)
    a = fib(n - 1);
#pragma omp task shared(b)
    b = fib(n - 2);
#pragma omp taskwait
    return a + b;
}

int main() {
    vector<double> v(2000000);
#pragma omp parallel for
    for (size_t i = 0; i < v.size(); i++)
        v[i] = i * 0.5;
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (size_t i = 0; i < v.size(); i++)
        s += v[i];
    cout.precision(15);
    cout << "sum " << s << '\n';
    long r;
#pragma omp parallel
#pragma omp single
    r = fib(27);
    cout << "fib " << r << '\n';
    int count = 0;
#pragma omp parallel for
    for (int i = 0; i < 1000; i++) {
#pragma omp atomic
        count++;
    }
    cout << "count " << count << '\n';
    return 0;
}
