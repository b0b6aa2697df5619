// probe.h is the harness of the hostile programs of isolation_test.go; the
// test inlines it where a program says #include "probe.h".
//
// PROBE(name, expr) makes one attempt in a forked child, so that a refusal,
// a crash or a kill by a system-call filter never stops the program, and
// prints one line "<name>\t<result>": "ok" when expr is not negative, the
// errno's name (EPERM) when it is, "signal N" when the child was killed,
// "exit N" when it exited on its own. Other lines are "<key>\t<value>"
// facts the test compares.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

__attribute__((constructor)) static void probe_unbuffered(void)
{
	// Forked children share stdout: no buffer may be copied or lost.
	setvbuf(stdout, NULL, _IONBF, 0);
}

// fact prints one "<key>\t<value>" line.
__attribute__((unused)) static void fact(const char *key, const char *fmt, ...)
{
	char buf[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	printf("%s\t%s\n", key, buf);
}

__attribute__((unused)) static void probe_report(const char *name, pid_t pid)
{
	int st;
	if (pid < 0) {
		fact(name, "fork failed: %s", strerrorname_np(errno));
		return;
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			fact(name, "waitpid failed: %s", strerrorname_np(errno));
			return;
		}
	if (WIFSIGNALED(st))
		fact(name, "signal %d", WTERMSIG(st));
	else if (WEXITSTATUS(st) == 0)
		fact(name, "ok");
	else if (WEXITSTATUS(st) < 200 && strerrorname_np(WEXITSTATUS(st)))
		fact(name, "%s", strerrorname_np(WEXITSTATUS(st)));
	else
		fact(name, "exit %d", WEXITSTATUS(st));
}

#define PROBE(name, expr)                                   \
	do {                                                \
		pid_t probe_pid_ = fork();                  \
		if (probe_pid_ == 0) {                      \
			errno = 0;                          \
			long probe_r_ = (long)(expr);       \
			_exit(probe_r_ >= 0 ? 0 : errno > 0 && errno < 200 ? errno : 200); \
		}                                           \
		probe_report(name, probe_pid_);             \
	} while (0)

// slurp reads up to size-1 bytes of path into buf (NUL-terminated) and
// returns the number of bytes, or -1 with errno.
__attribute__((unused)) static ssize_t slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, buf + n, size - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		if (r == 0 || (n += r) == size - 1)
			break;
	}
	buf[n] = 0;
	close(fd);
	return n;
}

// create makes a new file at path; its result is open's.
__attribute__((unused)) static int create(const char *path)
{
	return open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
}

// writefile writes s to an existing file.
__attribute__((unused)) static int writefile(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, s, strlen(s));
	int e = errno;
	close(fd);
	errno = e;
	return w < 0 ? -1 : 0;
}

// readsome fails with EIO when path reads as empty: a probe of a file that
// must not yield anything then reports "ok" only when it yields data.
__attribute__((unused)) static int readsome(const char *path)
{
	char buf[64];
	ssize_t n = slurp(path, buf, sizeof buf);
	if (n == 0)
		errno = EIO;
	return n > 0 ? 0 : -1;
}
