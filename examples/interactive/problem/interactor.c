// The interactor of a guessing game. The secret is argv[1], between 1 and
// 1000000. It writes 1000000, then answers each question "? x" of the
// solution with "<" (the secret is smaller than x), ">" (greater) or "="
// (found: the game ends), 20 questions at most. It exits 0 when the
// solution found the secret, 1 (a wrong answer) otherwise, and says why
// on stderr, as testlib's interactors do. A solution that stops reading
// is a wrong answer, not a crash of the interactor: it ignores SIGPIPE.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static int wrong(const char *why)
{
	fprintf(stderr, "wrong answer: %s\n", why);
	return 1;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	long n = 1000000, secret = argc > 1 ? atol(argv[1]) : 0;
	printf("%ld\n", n);
	if (fflush(stdout) != 0)
		return wrong("the solution stopped reading");
	char line[64];
	for (int q = 1;; q++) {
		long x;
		char nl;
		if (!fgets(line, sizeof line, stdin))
			return wrong("the solution stopped asking");
		if (sscanf(line, "? %ld%c", &x, &nl) != 2 || nl != '\n')
			return wrong("not a question");
		if (q > 20)
			return wrong("more than 20 questions");
		const char *a = secret < x ? "<" : secret > x ? ">" : "=";
		printf("%s\n", a);
		if (fflush(stdout) != 0)
			return wrong("the solution stopped reading");
		if (*a == '=') {
			fprintf(stderr, "found %ld in %d questions\n", secret, q);
			return 0;
		}
	}
}
