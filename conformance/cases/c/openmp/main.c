// OpenMP: a parallel reduction, a critical section and parallel sections.
#include <omp.h>
#include <stdio.h>

int main(void) {
    long long sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
    for (int i = 1; i <= 10000000; i++)
        sum += i % 1000;
    printf("sum %lld\n", sum);

    int hits = 0;
#pragma omp parallel num_threads(4)
    {
#pragma omp critical
        hits++;
    }
    printf("hits %d\n", hits);

    int a = 0, b = 0;
#pragma omp parallel sections
    {
#pragma omp section
        a = 1;
#pragma omp section
        b = 2;
    }
    printf("sections %d %d, max threads > 0: %d\n", a, b, omp_get_max_threads() > 0);
    return 0;
}
