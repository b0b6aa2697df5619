// mqueue.c: POSIX message queues, whose bytes the kernel counts against
// RLIMIT_MSGQUEUE per user (ucounts) in the task's user namespace and in
// every namespace above it, against the user that made each namespace.
// Argument "once": make one queue of 10 messages of 8192 bytes (the
// defaults), say how it went and remove it. Otherwise, argument
// <marker>-wait: make such queues until the kernel refuses one, and hold
// them (hold.h).
#include "probe.h"
#include "hold.h"
#include <mqueue.h>

static struct mq_attr attr = {.mq_maxmsg = 10, .mq_msgsize = 8192};
static int made;

static long queue(void)
{
	char name[64];
	snprintf(name, sizeof name, "/svc-hostile-%d", made);
	mqd_t q = mq_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600, &attr);
	if (q == (mqd_t)-1)
		return -1;
	made++;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: mqueue once | mqueue MARKER-wait\n");
		return 2;
	}
	if (!strcmp(argv[1], "once")) {
		once("mq_open", queue());
		mq_unlink("/svc-hostile-0");
		return 0;
	}
	count("queues", 1000, queue);
	hold(argv[1]);
	return 0;
}
