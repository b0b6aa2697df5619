// swap.c: turns /svc/d into a directory or a symlink to a host directory.
// Usage: swap MODE HOSTDIR, MODE one of
//
//	link  make d a symlink to the host directory
//	dir   make d a directory
//	race  swap d between directories and symlinks in a tight loop, in
//	      this process and a child, and exit after 10 to 60 ms: the
//	      task's end kills the child, leaving d at a random state
//
// The names d, p0..p3 hold two directories and three symlinks to the host
// directory (absolute, relative with many "..", through /proc/self/root);
// each swap exchanges d with one of the others atomically.
#include "probe.h"
#include <linux/fs.h>

#define NPOOL 4
static char pool[NPOOL][8];

static int isdir(const char *p)
{
	struct stat st;
	return lstat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int exchange(const char *a, const char *b)
{
	return renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
}

int main(int argc, char **argv)
{
	if (argc != 3 || chdir("/svc") < 0)
		return 2;
	const char *host = argv[2];
	char rel[PATH_MAX], magic[PATH_MAX];
	snprintf(rel, sizeof rel, "../../../../../../../../../../../../../../../..%s", host);
	snprintf(magic, sizeof magic, "/proc/self/root%s", host);
	for (int i = 0; i < NPOOL; i++)
		snprintf(pool[i], sizeof pool[i], "p%d", i);
	struct stat st;
	if (lstat("d", &st) < 0) {
		if (mkdir("d", 0755) < 0 || mkdir("p0", 0755) < 0 || symlinkat(host, AT_FDCWD, "p1") < 0 ||
		    symlinkat(rel, AT_FDCWD, "p2") < 0 || symlinkat(magic, AT_FDCWD, "p3") < 0) {
			perror("swap: setup");
			return 3;
		}
	}
	if (!strcmp(argv[1], "link") || !strcmp(argv[1], "dir")) {
		int want = !strcmp(argv[1], "dir");
		for (int i = 0; i < NPOOL && isdir("d") != want; i++)
			if (isdir(pool[i]) == want && exchange("d", pool[i]) < 0) {
				perror("swap: exchange");
				return 4;
			}
		printf("%s\n", isdir("d") ? "dir" : "link");
		return isdir("d") == want ? 0 : 5;
	}
	if (strcmp(argv[1], "race"))
		return 2;
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	srand(start.tv_nsec ^ getpid());
	long ms = 10 + rand() % 50;
	if (fork() == 0) {
		srand(getpid());
		for (;;)
			exchange("d", pool[rand() % NPOOL]);
	}
	for (unsigned i = 0;; i++) {
		exchange("d", pool[rand() % NPOOL]);
		if (i % 64 == 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 >= ms)
				return 0;
		}
	}
}
