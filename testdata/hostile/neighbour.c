// neighbour.c: runs next to another task of a parallel step and hunts it:
// it waits for /svc/a-started, then looks for a process whose command line
// holds argv[1] and kills every process it can see but itself and the
// init, then creates /svc/done.
#include "probe.h"

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	struct timespec ms = {0, 1000000};
	int waited = 0;
	while (access("/svc/a-started", F_OK) < 0 && waited < 5000) {
		nanosleep(&ms, NULL);
		waited++;
	}
	fact("a-started", "%s", waited < 5000 ? "yes" : "no");

	int found = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return 3;
	for (struct dirent *e; (e = readdir(d));) {
		int pid = atoi(e->d_name);
		if (pid <= 0 || pid == getpid())
			continue;
		char path[64], cmd[4096];
		snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
		ssize_t m = slurp(path, cmd, sizeof cmd);
		for (ssize_t k = 0; k < m; k++)
			if (!cmd[k])
				cmd[k] = ' ';
		if (m > 0 && strstr(cmd, argv[1]))
			found++;
		if (pid != 1)
			kill(pid, SIGKILL);
	}
	closedir(d);
	fact("marker-found", "%d", found);

	// Every pid number this process can signal or name.
	char vis[4096] = "";
	for (int pid = 1; pid <= 65536; pid++)
		if (kill(pid, 0) == 0 || errno == EPERM)
			snprintf(vis + strlen(vis), sizeof vis - strlen(vis), "%s%d", *vis ? " " : "", pid);
	fact("visible", "%s", vis);
	fact("self", "%d", getpid());
	fact("kill(-1, SIGKILL)", "%s", kill(-1, SIGKILL) == 0 ? "ok" : strerrorname_np(errno));
	int fd = creat("/svc/done", 0644);
	if (fd < 0)
		return 4;
	close(fd);
	return 0;
}
