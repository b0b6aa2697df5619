// The child side of a sandbox, in C so that it runs before the Go runtime
// starts. See doc.go for the protocol.
//
// The svc binary re-executes itself (a sealed copy of itself, see
// internal/runner) with argv[0] = "svc-init" into fresh namespaces. The
// constructor below recognises that name and never returns to the Go
// runtime: starting the runtime would cost about 2 ms per task and make this
// process multi-threaded, which unshare(2), seccomp and credential changes
// do not want.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/mount.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto.h"

// One parsed record: a tag and its NUL-separated fields.
struct rec {
	char tag;
	char *data;
	uint32_t len;
};

static int status_fd = SVC_FD_STATUS;

// report writes one status record "<tag> <text>\n" in a single write(2),
// so records of the init and of the task never interleave.
static void report(char tag, const char *fmt, ...)
{
	char buf[1024];
	int n = snprintf(buf, sizeof buf, "%c ", tag);
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 2)
		n = sizeof buf - 2;
	for (int i = 2; i < n; i++)
		if (buf[i] == '\n')
			buf[i] = ' ';
	buf[n++] = '\n';
	ssize_t w;
	do
		w = write(status_fd, buf, n);
	while (w < 0 && errno == EINTR);
}

// die reports a setup failure with errno's text and exits.
static void __attribute__((noreturn)) die(const char *what, const char *arg)
{
	report(SVC_REC_SETUP_FAILED, "%s %s: %s", what, arg ? arg : "", strerror(errno));
	_exit(SVC_EXIT_SETUP_FAILED);
}

// read_all reads fd to EOF into a malloc'd buffer.
static char *read_all(int fd, size_t *len)
{
	size_t cap = 64 * 1024, n = 0;
	char *buf = malloc(cap);
	if (!buf)
		die("read config", "malloc");
	for (;;) {
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				die("read config", "realloc");
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("read config", NULL);
		if (r == 0)
			break;
		n += r;
	}
	*len = n;
	return buf;
}

// field returns the i-th NUL-terminated field of a record, or NULL.
static char *field(const struct rec *r, int i)
{
	char *p = r->data, *end = r->data + r->len;
	for (; i > 0 && p < end; i--)
		p += strlen(p) + 1;
	return p < end ? p : NULL;
}

static unsigned long long num(const struct rec *r, int i)
{
	char *f = field(r, i);
	return f ? strtoull(f, NULL, 10) : 0;
}

static const char *nonempty(const char *s)
{
	return s && *s ? s : NULL;
}

static int mount_setattr_(const char *path, unsigned int flags, uint64_t set, uint64_t clr)
{
	struct mount_attr attr = {.attr_set = set, .attr_clr = clr};
	return syscall(SYS_mount_setattr, AT_FDCWD, path, flags, &attr, sizeof attr);
}

static int pivot_root_(const char *new_root, const char *put_old)
{
	return syscall(SYS_pivot_root, new_root, put_old);
}

// apply_mount carries out one mount operation of the plan (internal/mount).
static void apply_mount(const struct rec *r)
{
	const char *op = field(r, 0);
	const char *src = field(r, 1), *dst = field(r, 2), *fstype = field(r, 3), *data = field(r, 4);
	unsigned long long flags = num(r, 5), attr = num(r, 6), mode = num(r, 7);
	int optional = num(r, 8) != 0;
	int rc = 0;

	if (!op || !dst)
		die("bad mount record", op);
	if (!strcmp(op, SVC_MNT_MKDIR)) {
		rc = mkdir(dst, mode);
		if (rc < 0 && errno == EEXIST)
			rc = 0;
	} else if (!strcmp(op, SVC_MNT_TOUCH)) {
		rc = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode);
		if (rc >= 0)
			rc = close(rc);
	} else if (!strcmp(op, SVC_MNT_SYMLINK)) {
		rc = symlink(src, dst);
	} else if (!strcmp(op, SVC_MNT_MOUNT)) {
		rc = mount(nonempty(src), dst, nonempty(fstype), flags, nonempty(data));
		if (rc == 0 && attr)
			rc = mount_setattr_(dst, 0, attr, 0);
	} else if (!strcmp(op, SVC_MNT_BIND)) {
		// A recursive bind, then the attributes on every mount of the
		// tree at once: a plain remount would leave submounts writable.
		rc = mount(src, dst, NULL, MS_BIND | MS_REC, NULL);
		if (rc == 0 && attr)
			rc = mount_setattr_(dst, AT_RECURSIVE, attr, 0);
	} else if (!strcmp(op, SVC_MNT_SETATTR)) {
		rc = mount_setattr_(dst, flags ? AT_RECURSIVE : 0, attr, 0);
	} else if (!strcmp(op, SVC_MNT_PIVOT)) {
		// pivot_root(".", ".") stacks the old root under the new one;
		// detaching it leaves no path back to the host.
		if (chdir(dst) < 0)
			die("chdir new root", dst);
		if (pivot_root_(".", ".") < 0)
			die("pivot_root", dst);
		if (umount2(".", MNT_DETACH) < 0)
			die("detach old root", dst);
		rc = chdir("/");
	} else {
		errno = EINVAL;
		die("unknown mount op", op);
	}
	if (rc < 0 && !(optional && errno == ENOENT))
		die(op, dst);
}

// drop_caps empties the bounding set while CAP_SETPCAP is still held.
static void drop_bounding_set(void)
{
	for (int cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			die("drop bounding capability", NULL);
}

static void clear_caps(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) < 0)
		die("clear capabilities", NULL);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		die("clear ambient capabilities", NULL);
}

static void close_from(int lowfd)
{
	if (syscall(SYS_close_range, lowfd, ~0U, 0) == 0)
		return;
	for (int fd = lowfd; fd < 1024; fd++)
		close(fd);
}

static const char *env_path(char **envp)
{
	for (char **e = envp; *e; e++)
		if (!strncmp(*e, "PATH=", 5))
			return *e + 5;
	return "/usr/local/bin:/usr/bin:/bin";
}

// exec_task runs in the task process: rlimits, identity, no capabilities,
// no new privileges, only fds 0-2, the working directory, then the seccomp
// filter and execve. Nothing runs between the filter and execve but the
// PATH search (execve, write, exit_group).
static void __attribute__((noreturn))
exec_task(struct rec *recs, int nrec, char **argv, char **envp, const char *cmd)
{
	const char *dir = "/";
	struct sock_fprog prog = {0};
	unsigned long long uid = 0, gid = 0;

	if (setsid() < 0)
		die("setsid", NULL);
	for (int i = 0; i < nrec; i++) {
		struct rec *r = &recs[i];
		switch (r->tag) {
		case SVC_REC_RLIMIT: {
			struct rlimit rl = {.rlim_cur = num(r, 1), .rlim_max = num(r, 2)};
			if (setrlimit(num(r, 0), &rl) < 0)
				die("setrlimit", field(r, 0));
			break;
		}
		case SVC_REC_IDS:
			uid = num(r, 0);
			gid = num(r, 1);
			break;
		case SVC_REC_DIR:
			dir = field(r, 0);
			break;
		case SVC_REC_FILTER:
			prog.len = r->len / sizeof(struct sock_filter);
			prog.filter = (struct sock_filter *)r->data;
			break;
		}
	}
	drop_bounding_set();
	if (setresgid(gid, gid, gid) < 0)
		die("setresgid", NULL);
	if (setresuid(uid, uid, uid) < 0)
		die("setresuid", NULL);
	clear_caps();
	if (fcntl(status_fd, F_SETFD, FD_CLOEXEC) < 0)
		die("status fd", NULL);
	close_from(status_fd + 1);
	if (chdir(dir) < 0) {
		report(SVC_REC_WORKDIR, "working_dir %s: %s", dir, strerror(errno));
		_exit(SVC_EXIT_SETUP_FAILED);
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die("no_new_privs", NULL);
	if (prog.len > 0 && syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		die("seccomp", NULL);

	int err = ENOENT;
	if (strchr(cmd, '/')) {
		execve(cmd, argv, envp);
		err = errno;
	} else {
		char path[4096];
		const char *p = env_path(envp);
		for (;;) {
			const char *end = strchrnul(p, ':');
			int n = snprintf(path, sizeof path, "%.*s%s%s", (int)(end - p),
					 p, end == p ? "" : "/", cmd);
			if (n > 0 && n < (int)sizeof path) {
				execve(path, argv, envp);
				if (errno == EACCES || (errno != ENOENT && errno != ENOTDIR && err == ENOENT))
					err = errno;
			}
			if (!*end)
				break;
			p = end + 1;
		}
	}
	char msg[512];
	int n = snprintf(msg, sizeof msg, "svc: %s: %s\n", cmd,
			 err == ENOENT ? "command not found" : strerror(err));
	if (n > (int)sizeof msg - 1)
		n = sizeof msg - 1;
	if (write(2, msg, n) < 0) {
		// Nothing to do: the exit status says it all.
	}
	_exit(127);
}

static int run(void)
{
	size_t len;
	char *buf = read_all(SVC_FD_CONFIG, &len);
	close(SVC_FD_CONFIG);

	// Parse the records: tag (1 byte), length (4 bytes, little endian), data.
	int nrec = 0, nargv = 0, nenv = 0;
	struct rec *recs = calloc(len / 5 + 1, sizeof *recs);
	if (!recs)
		die("parse config", "calloc");
	for (size_t off = 0; off < len;) {
		if (len - off < 5)
			die("parse config", "short record");
		struct rec *r = &recs[nrec++];
		r->tag = buf[off];
		r->len = (uint8_t)buf[off + 1] | (uint8_t)buf[off + 2] << 8 |
			 (uint8_t)buf[off + 3] << 16 | (uint32_t)(uint8_t)buf[off + 4] << 24;
		r->data = buf + off + 5;
		if (r->len > len - off - 5)
			die("parse config", "record too long");
		off += 5 + r->len;
		nargv += r->tag == SVC_REC_ARG;
		nenv += r->tag == SVC_REC_ENV;
	}
	// The Go side ends every record with a NUL, so fields are C strings.
	char **argv = calloc(nargv + 1, sizeof *argv), **envp = calloc(nenv + 1, sizeof *envp);
	const char *cmd = NULL, *hostname = "svc";
	if (!argv || !envp)
		die("parse config", "calloc");
	nargv = nenv = 0;
	for (int i = 0; i < nrec; i++) {
		struct rec *r = &recs[i];
		if (r->tag == SVC_REC_ARG)
			argv[nargv++] = r->data;
		else if (r->tag == SVC_REC_ENV)
			envp[nenv++] = r->data;
		else if (r->tag == SVC_REC_CMD)
			cmd = r->data;
		else if (r->tag == SVC_REC_HOSTNAME)
			hostname = r->data;
	}
	if (!cmd || nargv == 0)
		die("parse config", "no command");

	// The parent has put this process in its cgroups before sending the
	// config, so the new cgroup namespace is rooted at the task's cgroup.
	if (unshare(CLONE_NEWCGROUP) < 0)
		die("unshare", "cgroup namespace");
	for (int i = 0; i < nrec; i++)
		if (recs[i].tag == SVC_REC_MOUNT)
			apply_mount(&recs[i]);
	if (sethostname(hostname, strlen(hostname)) < 0)
		die("sethostname", hostname);
	if (setdomainname(hostname, strlen(hostname)) < 0)
		die("setdomainname", hostname);
	// Not dumpable: the task cannot ptrace this process or open its
	// /proc files (exe, environ, mem) even where uids would allow it.
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		die("prctl", "dumpable");

	pid_t task = fork();
	if (task < 0)
		die("fork", "task");
	if (task == 0)
		exec_task(recs, nrec, argv, envp, cmd);
	report(SVC_REC_STARTED, "%d", task);
	// The init keeps no copy of the task's stdio: the task's streams end
	// with the last process of the task holding them.
	close(0);
	close(1);
	close(2);

	// Reap every process reparented to us until the task itself exits.
	// Returning makes the kernel kill the rest of the PID namespace.
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, __WALL);
		if (pid == task) {
			report(SVC_REC_EXIT, "%d", st);
			return 0;
		}
		if (pid < 0 && errno != EINTR)
			die("waitpid", NULL);
	}
}

__attribute__((constructor)) static void svc_init(int argc, char **argv, char **envp)
{
	(void)envp;
	if (argc < 1 || strcmp(argv[0], SVC_INIT_ARG0) != 0)
		return;
	_exit(run());
}
