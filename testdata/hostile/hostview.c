// hostview.c: what of the host the task can see. Arguments: the test
// process's host pid, the key of a System V shared memory segment the test
// made on the host, then absolute paths of marker files on the host.
#include "probe.h"
#include <sys/shm.h>

static int numeric(const char *s)
{
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: hostview PID SHMKEY [MARKER...]\n");
		return 2;
	}
	// Every process of /proc, with its command line.
	char pids[4096] = "";
	DIR *d = opendir("/proc");
	if (!d)
		return 3;
	int n = 0, list[256];
	for (struct dirent *e; (e = readdir(d)) && n < 256;)
		if (numeric(e->d_name))
			list[n++] = atoi(e->d_name);
	closedir(d);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (list[j] < list[i]) {
				int t = list[i];
				list[i] = list[j];
				list[j] = t;
			}
	for (int i = 0; i < n; i++) {
		char path[64], cmd[4096];
		snprintf(pids + strlen(pids), sizeof pids - strlen(pids), "%s%d", i ? " " : "", list[i]);
		snprintf(path, sizeof path, "/proc/%d/cmdline", list[i]);
		ssize_t m = slurp(path, cmd, sizeof cmd);
		for (ssize_t k = 0; k < m; k++)
			if (!cmd[k])
				cmd[k] = ' ';
		char key[64];
		snprintf(key, sizeof key, "cmdline %d", list[i]);
		fact(key, "%s", m < 0 ? strerrorname_np(errno) : cmd);
	}
	fact("pids", "%s", pids);
	fact("self", "%d", getpid());

	PROBE("kill(test pid, 0)", kill(atoi(argv[1]), 0));
	PROBE("shmget(host key)", shmget((key_t)strtol(argv[2], NULL, 10), 0, 0));
	for (int i = 3; i < argc; i++) {
		char name[4200];
		snprintf(name, sizeof name, "read marker %d", i - 3);
		PROBE(name, readsome(argv[i]));
	}
	PROBE("stat /root", ({ struct stat st; stat("/root", &st); }));
	PROBE("stat /var", ({ struct stat st; stat("/var", &st); }));
	PROBE("stat /home", ({ struct stat st; stat("/home", &st); }));
	return 0;
}
