/*
 * tour.c: what a C submission may reasonably do with libc, one mode per
 * argv[1] so that a mode which ends the process (abort, segv) does not hide the
 * others. Built dynamic and static. "all" runs every mode that returns.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/times.h>
#include <time.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Input and output through stdio, big allocations, realloc (mremap). */
static void io_and_memory(void)
{
	int n = 0, v;
	size_t cap = 16;
	int *a = malloc(cap * sizeof *a);
	while (scanf("%d", &v) == 1) {
		if ((size_t)n == cap)
			a = realloc(a, (cap *= 2) * sizeof *a);
		a[n++] = v;
	}
	qsort(a, n, sizeof *a, cmp);
	for (int i = 0; i < n; i++)
		printf("%d%c", a[i], i + 1 == n ? '\n' : ' ');
	free(a);
	char *big = malloc(64 << 20);
	memset(big, 1, 64 << 20);
	big = realloc(big, 128 << 20);
	big[(128 << 20) - 1] = 2;
	free(big);
	void *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mprotect(m, 4096, PROT_READ);
	munmap(m, 1 << 20);
	fprintf(stderr, "sqrt %.3f\n", sqrt((double)n + 2));
	fflush(stdout);
}

/* Clocks, sleeping, yielding, resource usage. */
static void timing(void)
{
	struct timespec ts;
	struct timeval tv;
	struct tms tms;
	struct rusage ru;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	clock_getres(CLOCK_MONOTONIC, &ts);
	gettimeofday(&tv, NULL);
	printf("time %d clock %d\n", time(NULL) > 0, clock() >= 0);
	times(&tms);
	getrusage(RUSAGE_SELF, &ru);
	usleep(1000);
	nanosleep(&(struct timespec){0, 1000000}, NULL);
	sched_yield();
	srand(time(NULL));
	printf("cpus %d page %d\n", sysconf(_SC_NPROCESSORS_ONLN) > 0, sysconf(_SC_PAGESIZE) > 0);
	struct rlimit rl;
	getrlimit(RLIMIT_STACK, &rl);
}

static volatile sig_atomic_t caught;
static jmp_buf env;
static void on_signal(int sig) { caught = sig; }
static void on_fpe(int sig) { (void)sig; longjmp(env, 1); }

/* Signal handlers, raise, alarm, a caught SIGFPE, sigsetjmp. */
static void signals(void)
{
	signal(SIGUSR1, on_signal);
	raise(SIGUSR1);
	signal(SIGALRM, on_signal);
	alarm(1);
	alarm(0);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	sigjmp_buf senv;
	if (!sigsetjmp(senv, 1))
		siglongjmp(senv, 1);
	signal(SIGFPE, on_fpe);
	if (!setjmp(env)) {
		volatile int z = 0;
		printf("%d\n", 1 / z);
	}
	printf("caught %d pid %d\n", caught, getpid() > 0);
}

/* Files in the working directory and /tmp. */
static void files(void)
{
	FILE *f = fopen("tour.out", "w");
	fprintf(f, "data\n");
	fclose(f);
	int fd = open("tour.out", O_RDWR | O_APPEND);
	write(fd, "more\n", 5);
	lseek(fd, 0, SEEK_SET);
	char buf[64];
	ssize_t n = read(fd, buf, sizeof buf);
	pread(fd, buf, 4, 0);
	struct stat st;
	fstat(fd, &st);
	ftruncate(fd, 4);
	int fd2 = dup(fd);
	dup2(fd2, 10);
	close(10);
	close(fd2);
	close(fd);
	stat("tour.out", &st);
	access("tour.out", R_OK);
	rename("tour.out", "tour.old");
	mkdir("tour.d", 0755);
	DIR *d = opendir(".");
	while (readdir(d))
		;
	closedir(d);
	rmdir("tour.d");
	unlink("tour.old");
	char cwd[4096];
	getcwd(cwd, sizeof cwd);
	char tmpl[] = "/tmp/tourXXXXXX";
	int t = mkstemp(tmpl);
	unlink(tmpl);
	close(t);
	int p[2];
	pipe(p);
	write(p[1], "x", 1);
	read(p[0], buf, 1);
	close(p[0]);
	close(p[1]);
	printf("files %zd %s\n", n, getenv("HOME") ? "home" : "");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";
	if (!strcmp(mode, "abort"))
		abort();
	if (!strcmp(mode, "segv")) {
		int *p = NULL;
		return *(volatile int *)p; /* SIGSEGV */
	}
	if (!strcmp(mode, "exit3"))
		exit(3);
	io_and_memory();
	timing();
	signals();
	files();
	return 0;
}
