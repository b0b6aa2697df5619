// procview.c: what a task reads of the host through /proc. Arguments:
// paths. For each, one line "<path>\t<what>": the number of bytes it reads
// ("<n> bytes"), the number of entries of a directory ("dir <n>"), or the
// errno's name of the failed open or read ("absent" for ENOENT).
#include "probe.h"

int main(int argc, char **argv)
{
	static char buf[1 << 16];
	for (int i = 1; i < argc; i++) {
		const char *p = argv[i];
		struct stat st;
		if (stat(p, &st) < 0) {
			fact(p, "%s", errno == ENOENT ? "absent" : strerrorname_np(errno));
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			DIR *d = opendir(p);
			if (!d) {
				fact(p, "%s", strerrorname_np(errno));
				continue;
			}
			int n = 0;
			for (struct dirent *e; (e = readdir(d));)
				n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
			closedir(d);
			fact(p, "dir %d", n);
			continue;
		}
		int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0) {
			fact(p, "%s", strerrorname_np(errno));
			continue;
		}
		long total = 0;
		ssize_t r;
		while ((r = read(fd, buf, sizeof buf)) > 0 && total < (64L << 20))
			total += r;
		if (r < 0)
			fact(p, "%s", strerrorname_np(errno));
		else
			fact(p, "%ld bytes", total);
		close(fd);
	}
	return 0;
}
