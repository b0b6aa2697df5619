// timers.c: POSIX timers, each of which holds a queued signal that the
// kernel counts against RLIMIT_SIGPENDING per user (ucounts) in the task's
// user namespace and in every namespace above it, against the user that
// made each namespace. Argument "once": make one timer and say how it
// went. Otherwise, argument <marker>-wait: make timers until the kernel
// refuses one, and hold them (hold.h).
#include "probe.h"
#include "hold.h"

static long timer(void)
{
	struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN};
	timer_t id;
	return timer_create(CLOCK_MONOTONIC, &ev, &id);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: timers once | timers MARKER-wait\n");
		return 2;
	}
	if (!strcmp(argv[1], "once")) {
		once("timer_create", timer());
		return 0;
	}
	count("timers", 1 << 20, timer);
	hold(argv[1]);
	return 0;
}
