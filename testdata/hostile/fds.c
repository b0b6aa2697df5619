// fds.c: the task's open file descriptors and environment.
#include "probe.h"

extern char **environ;

int main(void)
{
	char open_fds[8192] = "";
	for (int fd = 0; fd < 65536; fd++) {
		if (fcntl(fd, F_GETFD) < 0)
			continue;
		char path[64], target[PATH_MAX], key[32];
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		ssize_t n = readlink(path, target, sizeof target - 1);
		target[n < 0 ? 0 : n] = 0;
		// "pipe:[12345]" -> "pipe"
		char *colon = strchr(target, ':');
		if (colon)
			*colon = 0;
		snprintf(key, sizeof key, "fd %d", fd);
		fact(key, "%s", target);
		snprintf(open_fds + strlen(open_fds), sizeof open_fds - strlen(open_fds), "%s%d", *open_fds ? " " : "", fd);
	}
	fact("fds", "%s", open_fds);
	for (char **e = environ; *e; e++)
		fact("env", "%s", *e);
	return 0;
}
