// killall.c: kill(-1, SIGKILL) and kills of host pids by number. The
// arguments are pids of processes on the host.
#include "probe.h"

int main(int argc, char **argv)
{
	pid_t child = fork();
	if (child == 0) {
		for (;;)
			pause();
	}
	fact("kill(-1, SIGKILL)", "%s", kill(-1, SIGKILL) == 0 ? "ok" : strerrorname_np(errno));
	int st;
	if (waitpid(child, &st, 0) != child)
		fact("child", "waitpid %s", strerrorname_np(errno));
	else if (WIFSIGNALED(st))
		fact("child", "signal %d", WTERMSIG(st));
	else
		fact("child", "exit %d", WEXITSTATUS(st));
	for (int i = 1; i < argc; i++) {
		char name[64];
		snprintf(name, sizeof name, "kill(host pid %d, SIGKILL)", i - 1);
		PROBE(name, kill(atoi(argv[i]), SIGKILL));
	}
	fact("alive", "%d", getpid());
	return 0;
}
