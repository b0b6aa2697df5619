// A solution of the guessing game: it reads n, then halves the range of
// the secret with each question until the interactor says "=".
#include <stdio.h>

int main(void)
{
	long n;
	if (scanf("%ld", &n) != 1)
		return 1;
	for (long lo = 1, hi = n; lo <= hi;) {
		long mid = lo + (hi - lo) / 2;
		printf("? %ld\n", mid);
		fflush(stdout); // the interactor waits for the whole line
		char a[2];
		if (scanf("%1s", a) != 1)
			return 1;
		if (a[0] == '=')
			return 0;
		if (a[0] == '<')
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return 1;
}
