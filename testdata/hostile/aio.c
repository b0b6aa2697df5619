// aio.c: Linux AIO contexts, whose events the kernel counts in one
// host-wide counter (fs.aio-nr, up to fs.aio-max-nr). Argument "once":
// make one context of one event, say how it went, and destroy it.
// Otherwise, argument <marker>-wait: make contexts, as large as the
// kernel takes, until it refuses one of a single event, and hold them
// (hold.h).
#include "probe.h"
#include "hold.h"
#include <linux/aio_abi.h>

static long setup(unsigned nr)
{
	aio_context_t ctx = 0;
	return syscall(SYS_io_setup, nr, &ctx);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: aio once | aio MARKER-wait\n");
		return 2;
	}
	if (!strcmp(argv[1], "once")) {
		aio_context_t ctx = 0;
		long r = syscall(SYS_io_setup, 1, &ctx);
		once("io_setup", r);
		if (r == 0)
			syscall(SYS_io_destroy, ctx);
		return 0;
	}
	long contexts = 0, events = 0;
	int err = 0;
	for (unsigned nr = 1 << 16; nr > 0 && contexts < 1000;) {
		if (setup(nr) == 0) {
			contexts++;
			events += nr;
			continue;
		}
		err = errno;
		if (err != EAGAIN && err != EINVAL && err != ENOMEM)
			break;
		nr /= 2;
	}
	fact("contexts", "%ld %s", contexts, err ? strerrorname_np(err) : "max");
	fact("events", "%ld", events);
	hold(argv[1]);
	return 0;
}
