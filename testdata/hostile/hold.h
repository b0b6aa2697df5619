// hold.h is the second half of the harness of the resource programs
// (hostile_resources_linux_test.go), which the test inlines after probe.h
// where a program says #include "hold.h".
//
// A resource program takes as much of a kernel resource as it can, says
// so, and keeps it until the test, which meanwhile checks that root and
// another request can still have some, releases it. hold(arg) is that
// wait: arg is the program's argv[1], "<marker>-wait". It makes the FIFO
// /tmp/<marker>, rewrites its own argument in place to "<marker>-held",
// which the test sees in the process's command line from the host, and
// blocks until the test has opened the FIFO (through /proc/<pid>/root)
// and closed it again.
#include <sys/stat.h>

__attribute__((unused)) static void hold(char *arg)
{
	size_t n = strlen(arg);
	if (n < 5 || strcmp(arg + n - 5, "-wait") != 0) {
		fprintf(stderr, "hold: %s: want <marker>-wait\n", arg);
		exit(2);
	}
	char fifo[4096];
	snprintf(fifo, sizeof fifo, "/tmp/%.*s", (int)(n - 5), arg);
	if (mkfifo(fifo, 0600) < 0) {
		fprintf(stderr, "mkfifo %s: %s\n", fifo, strerror(errno));
		exit(3);
	}
	memcpy(arg + n - 4, "held", 4);
	int fd;
	while ((fd = open(fifo, O_RDONLY | O_CLOEXEC)) < 0)
		if (errno != EINTR) {
			fprintf(stderr, "open %s: %s\n", fifo, strerror(errno));
			exit(3);
		}
	char c;
	while (read(fd, &c, 1) != 0 && errno == EINTR)
		;
	close(fd);
}

// count runs make until it fails or max is reached, and prints
// "<name>\t<count> <errno name>" ("<count> max" when it never failed).
__attribute__((unused)) static long count(const char *name, long max, long (*make)(void))
{
	long n = 0;
	errno = 0;
	while (n < max && make() >= 0)
		n++;
	fact(name, "%ld %s", n, n == max ? "max" : strerrorname_np(errno) ? strerrorname_np(errno) : "?");
	return n;
}

// once prints "<name>\tok" when r is not negative, else the errno's name:
// the result of one attempt made in the program itself, for profiles
// under which PROBE's fork kills the task (native_v2).
__attribute__((unused)) static void once(const char *name, long r)
{
	fact(name, "%s", r >= 0 ? "ok" : strerrorname_np(errno) ? strerrorname_np(errno) : "?");
}
