// inotify.c: inotify instances and watches, which the kernel counts per
// user (ucounts) in the task's user namespace and in every namespace
// above it, against the user that made each namespace. Argument "once":
// make one instance and one watch, and say how it went (a concurrent
// request). Otherwise, argument <marker>-wait: make instances until the
// kernel refuses one, then watch every file and directory of /usr on one
// instance after another until the kernel refuses a watch, and hold them
// all (hold.h).
#include "probe.h"
#include "hold.h"
#include <ftw.h>
#include <sys/inotify.h>

static long instance(void) { return inotify_init1(IN_CLOEXEC); }

// The instances kept back for the watches, one per pass over /usr.
#define PASSES 4
static int fds[PASSES], cur;
static long watches;
static int watch_err;

// watch adds a watch of path to the current instance: it stops the walk
// when the kernel refuses one for want of room.
static int watch(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st, (void)type, (void)ftw;
	if (inotify_add_watch(fds[cur], path, IN_ATTRIB | IN_DONT_FOLLOW) >= 0) {
		watches++;
		return 0;
	}
	if (errno == EACCES || errno == ENOENT) // unreadable or gone: the next one
		return 0;
	watch_err = errno;
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: inotify once | inotify MARKER-wait\n");
		return 2;
	}
	if (!strcmp(argv[1], "once")) {
		int fd = inotify_init1(IN_CLOEXEC);
		once("inotify_init1", fd);
		once("inotify_add_watch", fd < 0 ? fd : inotify_add_watch(fd, "/", IN_ATTRIB));
		return 0;
	}
	int kept = 0;
	for (; kept < PASSES && (fds[kept] = inotify_init1(IN_CLOEXEC)) >= 0; kept++)
		;
	fact("kept", "%d", kept);
	count("instances", 4000, instance);
	// Each instance watches an inode once at most: a pass over /usr with
	// each instance kept, until the kernel refuses a watch.
	for (cur = 0; cur < kept && !watch_err; cur++)
		nftw("/usr", watch, 64, FTW_PHYS);
	fact("watches", "%ld %s", watches, watch_err ? strerrorname_np(watch_err) : "max");
	hold(argv[1]);
	return 0;
}
