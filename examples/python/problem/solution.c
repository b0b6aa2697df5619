/* Sum: read n, then n integers; print their sum.
 *
 * Wrong on purpose, to show the verdicts: the sum is an int, which
 * overflows on big values (wrong answer), and the numbers go into an
 * array of 100, which n = 100000 runs far past (runtime error). */
#include <stdio.h>

int main(void) {
	int n, a[100];
	if (scanf("%d", &n) != 1)
		return 1;
	for (int i = 0; i < n; i++)
		if (scanf("%d", &a[i]) != 1)
			return 1;
	int sum = 0;
	for (int i = 0; i < n; i++)
		sum += a[i];
	printf("%d\n", sum);
	return 0;
}
