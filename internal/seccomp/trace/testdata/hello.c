/* hello.c: the smallest submission: read numbers, print their sum. */
#include <stdio.h>

int main(void)
{
	long long x, sum = 0;
	while (scanf("%lld", &x) == 1)
		sum += x;
	printf("sum %lld\n", sum);
	return 0;
}
