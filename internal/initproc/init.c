// The zygote and the child side of a sandbox, in C so that they run before
// the Go runtime starts. See doc.go for the protocol.
//
// The svc binary executes a sealed copy of itself (see internal/runner)
// with argv[0] = "svc-zygote" once. The constructor below recognises that
// name and never returns to the Go runtime: the zygote stays a small,
// single-threaded process that clones the init of every sandbox into fresh
// namespaces. Cloning from it costs a fraction of a Go fork of the whole
// service and of an execve of the service's binary per task.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/mount.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <linux/sched.h>
#include <unistd.h>

#include "proto.h"

// One parsed record: a tag and its NUL-separated fields.
struct rec {
	char tag;
	char *data;
	uint32_t len;
};

static int status_fd = SVC_FD_STATUS;

// ncgroup is the number of cgroup join files (v1's tasks, v2's
// cgroup.procs) the init holds from SVC_FD_CGROUP on, for its task
// process to join; ntree the number of detached mount trees it holds
// after them, for the plan's attach operations.
static int ncgroup, ntree;

// last_pid is the PID namespace's ns_last_pid, opened while /proc/sys was
// still writable.
static int last_pid = -1;

// The cell's records, whose SVC_REC_USERNS_LIMIT ones (the limits of the
// sandbox's user namespace) are written through the plan's procfs once it
// is mounted, while /proc/sys is still writable; limits_set says they
// were.
static struct rec *cell_recs;
static int ncell_recs, limits_set;

static int tree_fd(int i)
{
	return SVC_FD_CGROUP + ncgroup + i;
}

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

// The task process shares the init's memory until its execve
// (start_task), so what it allocates must not stay in the init: a
// shell's init runs task after task and must keep neither their configs
// nor their memory. It allocates from an arena the init maps once and
// clears after each task (the bytes used, a few kilobytes for most
// tasks), and what does not fit there is mapped apart, listed, and
// unmapped by the init once the task process has exec'd or exited.
#define TASK_ARENA (256 * 1024)
static char *task_arena;
static size_t task_arena_used;

#define TASK_MAPS 32
static struct {
	void *p;
	size_t n;
} task_maps[TASK_MAPS];
static int ntask_maps;

// task_alloc returns n zeroed bytes for the task process.
static void *task_alloc(size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n == 0)
		n = 16;
	if (task_arena && n <= TASK_ARENA - task_arena_used) {
		void *p = task_arena + task_arena_used;
		task_arena_used += n;
		return p;
	}
	if (ntask_maps == TASK_MAPS) {
		errno = ENOMEM;
		die("task memory", NULL);
	}
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("task memory", "mmap");
	task_maps[ntask_maps].p = p;
	task_maps[ntask_maps].n = n;
	ntask_maps++;
	return p;
}

// task_shrink gives back the end of p, the last allocation, past its
// first n bytes, if p is in the arena: those bytes were never written.
static void task_shrink(char *p, size_t n)
{
	size_t end = (size_t)(p - task_arena) + ((n + 15) & ~(size_t)15);
	if (task_arena && p >= task_arena && p < task_arena + TASK_ARENA && end < task_arena_used)
		task_arena_used = end;
}

// task_free clears what the last task process allocated: the arena's
// bytes in use are zeroed (or its pages dropped, for a large config) and
// the rest is unmapped.
static void task_free(void)
{
	for (int i = 0; i < ntask_maps; i++)
		munmap(task_maps[i].p, task_maps[i].n);
	ntask_maps = 0;
	if (task_arena_used > 64 * 1024)
		madvise(task_arena, TASK_ARENA, MADV_DONTNEED);
	else if (task_arena_used > 0)
		memset(task_arena, 0, task_arena_used);
	task_arena_used = 0;
}

// The most fds a task's records may come with (SVC_REC_STDIO).
#define TASK_PASSED_MAX 3

// recv_all reads the socket fd to EOF into memory of task_alloc, as the
// task process, and the fds sent with it (SCM_RIGHTS, close-on-exec) into
// passed, at most TASK_PASSED_MAX: more, or a cut control message, is a
// setup failure, never a task run without the fds it was sent.
static char *recv_all(int fd, size_t *len, int *passed, int *npassed)
{
	size_t cap = 64 * 1024, n = 0;
	char *buf = task_alloc(cap);
	*npassed = 0;
	for (;;) {
		if (n == cap) {
			// The old buffer stays listed until task_free.
			char *bigger = task_alloc(2 * cap);
			memcpy(bigger, buf, n);
			buf = bigger;
			cap *= 2;
		}
		union {
			char buf[CMSG_SPACE(TASK_PASSED_MAX * sizeof(int))];
			struct cmsghdr align;
		} u;
		struct iovec iov = {.iov_base = buf + n, .iov_len = cap - n};
		struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
		ssize_t r = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("read config", NULL);
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			int k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (int i = 0; i < k; i++) {
				if (*npassed == TASK_PASSED_MAX) {
					errno = E2BIG;
					die("read config", "passed fds");
				}
				memcpy(&passed[(*npassed)++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			}
		}
		if (msg.msg_flags & MSG_CTRUNC) {
			errno = EMSGSIZE;
			die("read config", "passed fds");
		}
		if (r == 0)
			break;
		n += r;
	}
	task_shrink(buf, n);
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

// set_userns_limits writes each limit of the cell's records to
// <proc>/sys/user/<name>: the files of the user namespace of the writer,
// this one, where the init is root. A limit not written fails the setup;
// one whose file the kernel lacks counts nothing here.
static void set_userns_limits(const char *proc)
{
	for (int i = 0; i < ncell_recs; i++) {
		if (cell_recs[i].tag != SVC_REC_USERNS_LIMIT)
			continue;
		const char *name = field(&cell_recs[i], 0), *max = field(&cell_recs[i], 1);
		char path[4096];
		if (!name || !max || strchr(name, '/')) {
			errno = EINVAL;
			die("bad user namespace limit", name);
		}
		snprintf(path, sizeof path, "%s/sys/user/%s", proc, name);
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		// A kernel without the file has no such count (fanotify's
		// came with unprivileged fanotify, in 5.13): nothing to bound.
		if (fd < 0 && errno == ENOENT)
			continue;
		if (fd < 0)
			die("open", path);
		ssize_t w = write(fd, max, strlen(max));
		if (w != (ssize_t)strlen(max)) {
			if (w >= 0)
				errno = EIO;
			die("write", path);
		}
		close(fd);
	}
	limits_set = 1;
}

// apply_mount carries out one mount operation of the plan (internal/mount).
static void apply_mount(const struct rec *r)
{
	const char *op = field(r, 0);
	const char *src = field(r, 1), *dst = field(r, 2), *fstype = field(r, 3), *data = field(r, 4);
	unsigned long long flags = num(r, 5), attr = num(r, 6);
	int optional = num(r, 7) != 0;
	int rc = 0;

	if (!op || !dst)
		die("bad mount record", op);
	if (!strcmp(op, SVC_MNT_MOUNT)) {
		rc = mount(nonempty(src), dst, nonempty(fstype), flags, nonempty(data));
		if (rc == 0 && attr)
			rc = mount_setattr_(dst, 0, attr, 0);
		if (rc == 0 && fstype && !strcmp(fstype, "proc")) {
			// Before the plan binds /proc/sys read-only: the shell
			// resets the PID sequence after each task.
			char path[4096];
			snprintf(path, sizeof path, "%s/sys/kernel/ns_last_pid", dst);
			int fd = open(path, O_WRONLY | O_CLOEXEC);
			// Above the fds a task's files take (shell_recv).
			if (fd < 0 || (last_pid = fcntl(fd, F_DUPFD_CLOEXEC, 32)) < 0)
				die("open", path);
			close(fd);
			set_userns_limits(dst);
		}
	} else if (!strcmp(op, SVC_MNT_BIND)) {
		// A recursive bind, then the attributes on every mount of the
		// tree at once: a plain remount would leave submounts writable.
		rc = mount(src, dst, NULL, MS_BIND | MS_REC, NULL);
		if (rc == 0 && attr)
			rc = mount_setattr_(dst, AT_RECURSIVE, attr, 0);
	} else if (!strcmp(op, SVC_MNT_ATTACH)) {
		// A tree cloned from the parent's mount: moved here whole, then
		// the attributes on every mount of it.
		char *end;
		long i = src ? strtol(src, &end, 10) : -1;
		if (!src || *end || i < 0 || i >= ntree) {
			errno = EINVAL;
			die("attach: no such tree", src);
		}
		rc = syscall(SYS_move_mount, tree_fd(i), "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH);
		if (rc == 0 && attr)
			rc = mount_setattr_(dst, AT_RECURSIVE, attr, 0);
	} else if (!strcmp(op, SVC_MNT_CHDIR)) {
		// Relative paths of later operations start here.
		rc = chdir(dst);
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

// drop_bounding_set empties the bounding set while CAP_SETPCAP is still
// held. The init does it once, after its mounts (its effective
// capabilities stay: the bounding set only limits what an execve may
// grant), and each task process, a clone in the same user namespace,
// inherits the empty set: one prctl per capability, so done once a shell.
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

// parse splits buf into records: tag (1 byte), length (4 bytes, little
// endian), data. The Go side ends every string record with a NUL, so fields
// are C strings. It returns the number of records; the task process
// (task) takes their memory from task_alloc, the init from calloc.
static int parse(char *buf, size_t len, struct rec **out, int task)
{
	int nrec = 0;
	struct rec *recs = task ? task_alloc((len / 5 + 1) * sizeof *recs) : calloc(len / 5 + 1, sizeof *recs);
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
	}
	*out = recs;
	return nrec;
}

// read_frame reads one frame from fd: a little-endian uint32 length and
// that many bytes, not a byte more (what follows is the task's).
static char *read_frame(int fd, size_t *len)
{
	unsigned char hdr[4];
	size_t got = 0, n;
	char *buf;
	while (got < sizeof hdr) {
		ssize_t r = read(fd, hdr + got, sizeof hdr - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die("read cell config", r == 0 ? "EOF" : NULL);
		got += r;
	}
	n = hdr[0] | hdr[1] << 8 | hdr[2] << 16 | (size_t)hdr[3] << 24;
	buf = malloc(n + 1);
	if (!buf)
		die("read cell config", "malloc");
	for (got = 0; got < n;) {
		ssize_t r = read(fd, buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die("read cell config", r == 0 ? "EOF" : NULL);
		got += r;
	}
	*len = n;
	return buf;
}

// install_filter sets no_new_privs and installs the seccomp program prog
// in the task process. A watched program comes with a listener
// (SECCOMP_FILTER_FLAG_NEW_LISTENER), whose fd it returns; -1 otherwise.
static int install_filter(const struct sock_fprog *prog, int watched)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die("no_new_privs", NULL);
	long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, watched ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0, prog);
	if (rc < 0)
		die("seccomp", NULL);
	return watched ? (int)rc : -1;
}

// send_fd sends the byte tag with fd in SCM_RIGHTS on the socket sock.
static void send_fd(int sock, char tag, int fd)
{
	struct iovec iov = {.iov_base = &tag, .iov_len = 1};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	ssize_t n;
	while ((n = sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n != 1)
		die("send the base filter's listener", NULL);
}

// early_filter is the task's seccomp program when its shell task brought
// it (a filter record among its mount records): the task process installs
// it before it says it is ready, off the task's critical path. From then
// on it makes only the calls initproc.PreExecCalls lists until its
// execve, which the parent checked the program allows.
static struct sock_fprog early_filter;

// early_watched: the early filter notifies (a SVC_REC_WATCHED record):
// the task process installs it with a listener, whose fd number its ready
// line gives. The parent takes the listener from it (pidfd_getfd) before
// the release, after which the task process closes its own: no program
// of the task ever holds it.
static int early_watched;

// exec_task runs in the task process once it is released: the working
// directory, no_new_privs, then the seccomp filter and execve. Nothing runs
// between the filter and execve but the PATH search (execve, write,
// exit_group). With an early filter, no_new_privs and the filter came
// before the command was read.
static void __attribute__((noreturn))
exec_task(char **argv, char **envp, const char *cmd, const char *dir, struct sock_fprog *prog)
{
	if (chdir(dir) < 0) {
		report(SVC_REC_WORKDIR, "working_dir %s: %s", dir, strerror(errno));
		_exit(SVC_EXIT_SETUP_FAILED);
	}
	if (prog->len > 0)
		install_filter(prog, 0);
	else if (early_filter.len == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die("no_new_privs", NULL);

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

// join_cgroups moves the task process into the task's cgroups, writing
// "0" (the writer) to each of its join files (v1's tasks, v2's
// cgroup.procs: the process has one thread), then makes the new cgroup
// namespace rooted there: the task sees its cgroup as "/". The init stays
// where the zygote made it, so the task's CPU time, memory and process
// counts are its own, without the sandbox's setup. It runs while the
// process still has its capabilities (unshare needs CAP_SYS_ADMIN in the
// user namespace); the files were opened by the parent, whose credentials
// the kernel checks.
static void join_cgroups(void)
{
	for (int i = 0; i < ncgroup; i++) {
		ssize_t w;
		do
			w = write(SVC_FD_CGROUP + i, "0", 1);
		while (w < 0 && errno == EINTR);
		if (w != 1)
			die("join the task's cgroup", "write 0");
		close(SVC_FD_CGROUP + i);
	}
	if (unshare(CLONE_NEWCGROUP) < 0)
		die("unshare", "cgroup namespace");
}

// set_rlimit applies an rlimit record: resource, soft, hard.
static void set_rlimit(const struct rec *r)
{
	struct rlimit rl = {.rlim_cur = num(r, 1), .rlim_max = num(r, 2)};
	if (setrlimit(num(r, 0), &rl) < 0)
		die("setrlimit", field(r, 0));
}

// set_stdio applies a stdio record: the task's fd target (0-2) becomes
// the next fd passed with the records ("p": its stdin file) or a copy of
// its fd source (2>&1: "1").
static void set_stdio(const struct rec *r, const int *passed, int npassed, int *used)
{
	const char *to = field(r, 0), *from = field(r, 1);
	int target = to && to[0] >= '0' && to[0] <= '2' && !to[1] ? to[0] - '0' : -1, src = -1;
	if (from && !strcmp(from, "p")) {
		if (*used < npassed)
			src = passed[(*used)++];
	} else if (from && from[0] >= '0' && from[0] <= '2' && !from[1]) {
		src = from[0] - '0';
	}
	// A passed fd lands at 5 or above: 0-4 are taken.
	if (target < 0 || src < 0 || src == target) {
		errno = EINVAL;
		die("parse task", "stdio record");
	}
	if (dup3(src, target, 0) < 0)
		die("task stdio", to);
}

// task_main is the task process, cloned by the init ahead of its task: it
// sets its rlimits, joins the task's cgroups (join_cgroups), becomes the
// unprivileged task identity with no capabilities and only fds 0-4, says
// it is ready and waits for its command (the task's records on the config
// fd, up to EOF), then lowers the rlimits the records give.
static void __attribute__((noreturn)) task_main(struct rec *cell, int ncell)
{
	unsigned long long uid = 0, gid = 0;

	prctl(PR_SET_NAME, "svc-task", 0, 0, 0);
	// A shell ignores SIGPIPE (its parent may close a status pipe
	// first); the task gets the default, as any program expects.
	signal(SIGPIPE, SIG_DFL);
	// A process group of its own, in the session the init made: no
	// controlling terminal, and no scheduler autogroup made and freed for
	// each task as a session of its own would have (setsid).
	if (setpgid(0, 0) < 0)
		die("setpgid", NULL);
	for (int i = 0; i < ncell; i++) {
		struct rec *r = &cell[i];
		if (r->tag == SVC_REC_RLIMIT) {
			set_rlimit(r);
		} else if (r->tag == SVC_REC_IDS) {
			uid = num(r, 0);
			gid = num(r, 1);
		}
	}
	join_cgroups();
	if (setresgid(gid, gid, gid) < 0)
		die("setresgid", NULL);
	if (setresuid(uid, uid, uid) < 0)
		die("setresuid", NULL);
	clear_caps();
	if (fcntl(status_fd, F_SETFD, FD_CLOEXEC) < 0 || fcntl(SVC_FD_CONFIG, F_SETFD, FD_CLOEXEC) < 0)
		die("fd flags", NULL);
	close_from(status_fd + 1);
	int listener = -1;
	if (early_filter.len > 0)
		listener = install_filter(&early_filter, early_watched);
	if (listener >= 0)
		report(SVC_REC_READY, "%d", listener);
	else
		report(SVC_REC_READY, "");

	size_t len;
	int passed[TASK_PASSED_MAX], npassed, used = 0;
	char *buf = recv_all(SVC_FD_CONFIG, &len, passed, &npassed);
	close(SVC_FD_CONFIG);
	if (listener >= 0)
		close(listener); // the parent has its own by now
	struct rec *recs;
	int nrec = parse(buf, len, &recs, 1), nargv = 0, nenv = 0;
	for (int i = 0; i < nrec; i++) {
		nargv += recs[i].tag == SVC_REC_ARG;
		nenv += recs[i].tag == SVC_REC_ENV;
	}
	char **argv = task_alloc((nargv + 1) * sizeof *argv), **envp = task_alloc((nenv + 1) * sizeof *envp);
	const char *cmd = NULL, *dir = "/";
	struct sock_fprog prog = {0};
	if (!argv || !envp)
		die("parse task", "calloc");
	nargv = nenv = 0;
	for (int i = 0; i < nrec; i++) {
		struct rec *r = &recs[i];
		switch (r->tag) {
		case SVC_REC_ARG:
			argv[nargv++] = r->data;
			break;
		case SVC_REC_ENV:
			envp[nenv++] = r->data;
			break;
		case SVC_REC_CMD:
			cmd = r->data;
			break;
		case SVC_REC_DIR:
			dir = r->data;
			break;
		case SVC_REC_FILTER:
			prog.len = r->len / sizeof(struct sock_filter);
			prog.filter = (struct sock_filter *)r->data;
			break;
		case SVC_REC_RLIMIT:
			// The task's own limits, lower than the cell's: allowed
			// without privilege, and by every profile's filter
			// (initproc.PreExecCalls), installed already or not.
			set_rlimit(r);
			break;
		case SVC_REC_STDIO:
			set_stdio(r, passed, npassed, &used);
			break;
		}
	}
	// Every fd passed has its place, or the task does not run.
	if (used != npassed) {
		errno = EINVAL;
		die("parse task", "passed fds without a stdio record");
	}
	for (int i = 0; i < npassed; i++)
		close(passed[i]);
	if (!cmd || nargv == 0)
		die("parse task", "no command");
	exec_task(argv, envp, cmd, dir, &prog);
}

struct task_args {
	struct rec *recs;
	int nrec;
};

static int task_entry(void *arg)
{
	struct task_args *a = arg;
	task_main(a->recs, a->nrec);
}

// setup applies the cell frame: the mount plan, the host name, and makes
// the init non-dumpable.
static void setup(struct rec *recs, int nrec)
{
	const char *hostname = "svc";
	for (int i = 0; i < nrec; i++)
		if (recs[i].tag == SVC_REC_HOSTNAME)
			hostname = recs[i].data;
	// For the procfs mount, which writes the user namespace's limits.
	cell_recs = recs;
	ncell_recs = nrec;
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
}

// start_task clones the task process (see task_main) into an IPC
// namespace of its own and drops the init's copies of its stdio and
// cgroup files.
//
// The task process shares the init's memory until its execve, and the
// init waits meanwhile (CLONE_VM|CLONE_VFORK, as posix_spawn): no copy of
// the init's page tables to make, fault in and tear down again at the
// execve. The init has nothing to do until then, and the task process runs
// only this file's code before it; it has a stack of its own.
static pid_t start_task(struct rec *recs, int nrec)
{
	static char *stack;
	static struct task_args args;
	const size_t stack_size = 256 * 1024;
	if (!stack) {
		stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (stack == MAP_FAILED)
			die("mmap", "task stack");
	}
	args = (struct task_args){recs, nrec};
	pid_t task = clone(task_entry, stack + stack_size, CLONE_VM | CLONE_VFORK | CLONE_NEWIPC | SIGCHLD, &args);
	if (task < 0)
		die("clone", "task");
	// The task process has exec'd or exited: its memory here is garbage.
	task_free();
	// The init keeps no copy of the task's stdio or config: the task's
	// streams end with the last process of the task holding them.
	close(0);
	close(1);
	close(2);
	for (int i = 0; i < ncgroup; i++)
		close(SVC_FD_CGROUP + i);
	return task;
}

// wait_task reaps processes of the PID namespace until the task exits,
// and writes its wait status.
static void wait_task(pid_t task)
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, __WALL);
		if (pid == task) {
			report(SVC_REC_EXIT, "%d", st);
			return;
		}
		if (pid < 0 && errno != EINTR)
			die("waitpid", NULL);
	}
}

// received_fds copies the fds of msg's SCM_RIGHTS messages into fds (room
// for SVC_SPAWN_MAX_FDS; a control buffer of that size makes the kernel
// close any beyond, with MSG_CTRUNC) and returns how many there are.
static int received_fds(struct msghdr *msg, int *fds)
{
	int nfds = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (int i = 0; i < k && nfds < SVC_SPAWN_MAX_FDS; i++)
			memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	}
	return nfds;
}

// The control socket of a shell, moved out of the task's fd range.
static int ctl = -1;

// ctl_flags are the control socket's file status flags, without O_ASYNC.
static int ctl_flags;

// on_control runs on every event of the control socket while the init
// watches it (watch): once the other end is closed (the service is dead,
// or has given the shell up), the init exits wherever it is, and the
// kernel kills every process of its PID namespace with it. Any other
// event changes nothing.
static void on_control(int sig)
{
	(void)sig;
	int saved = errno;
	struct pollfd p = {.fd = ctl, .events = POLLRDHUP};
	const struct timespec now = {0};
	if (ppoll(&p, 1, &now, NULL) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)))
		_exit(0);
	errno = saved;
}

// watch_control makes the init the receiver of its control socket's
// signals (SIGIO, on_control).
static void watch_control(void)
{
	struct sigaction sa = {.sa_handler = on_control, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGIO, &sa, NULL) < 0 || fcntl(ctl, F_SETOWN, getpid()) < 0 ||
	    (ctl_flags = fcntl(ctl, F_GETFL)) < 0)
		die("shell: watch the control socket", NULL);
}

// watch has the kernel signal every event of the control socket, the
// hangup among them (O_ASYNC), from before a task process is made until
// every process of the task is gone, and then no longer: with the
// parent-death signal (cell_child), the second of two ways a shell ends
// with its service, which depends neither on which thread of the service
// is the init's parent nor on a signal a change of ids clears. Outside
// that time nothing of a task runs, and the socket itself ends the init:
// its EOF when it waits for a task, a failed write after one. A hangup
// before the watch needs no look: a service dead by then released no
// task (it releases one once the task process, made after the watch, is
// ready), and the task process reads its command's EOF and exits.
// Watched only then, the
// socket signals nothing in the common case (the service writes nothing
// meanwhile): a task costs two fcntl.
static void watch(int on)
{
	if (fcntl(ctl, F_SETFL, on ? ctl_flags | O_ASYNC : ctl_flags) < 0)
		die("shell: watch the control socket", NULL);
}

// shell_recv receives one task on the control socket: its fds go to 0-4,
// its cgroup files from SVC_FD_CGROUP on and its trees after them; its
// mount records are returned. It returns NULL at EOF: the parent is done
// with the shell.
static char *shell_recv(size_t *len)
{
	struct svc_task t;
	struct iovec iov = {.iov_base = &t, .iov_len = sizeof t};
	union {
		char buf[CMSG_SPACE(SVC_SPAWN_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	// Without MSG_CMSG_CLOEXEC: fds 0-2 go through the task's execve, and
	// the init itself never executes anything.
	ssize_t n;
	do
		n = recvmsg(ctl, &msg, MSG_WAITALL);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return NULL;
	int fds[SVC_SPAWN_MAX_FDS], nfds = received_fds(&msg, fds);
	int want = 5 + (int)t.nprocs + (int)t.ntrees;
	if (n != sizeof t || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || t.version != SVC_TASK_VERSION ||
	    nfds != want || SVC_FD_CGROUP + want - 5 > 32 || t.framelen > (1 << 20)) {
		errno = EINVAL;
		die("shell: bad task message", NULL);
	}
	// The kernel gives received fds the lowest free numbers, in order,
	// and the last task left 0-31 free: they are in place already, but
	// for a reason not foreseen here.
	int in_place = 1;
	for (int i = 0; i < nfds; i++)
		in_place = in_place && fds[i] == i;
	if (!in_place) {
		// Into place, through fds above the range so none is
		// overwritten.
		int tmp[SVC_SPAWN_MAX_FDS];
		for (int i = 0; i < nfds; i++)
			if ((tmp[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 64)) < 0 || close(fds[i]) < 0)
				die("shell: task fds", NULL);
		for (int i = 0; i < nfds; i++)
			if (dup3(tmp[i], i, 0) < 0 || close(tmp[i]) < 0)
				die("shell: task fds", NULL);
	}
	ncgroup = t.nprocs;
	ntree = t.ntrees;
	char *buf = malloc(t.framelen + 1);
	if (!buf)
		die("shell: task frame", "malloc");
	for (size_t got = 0; got < t.framelen;) {
		ssize_t r = read(ctl, buf + got, t.framelen - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die("shell: task frame", r == 0 ? "EOF" : NULL);
		got += r;
	}
	*len = t.framelen;
	return buf;
}

// undo_mounts removes a task's mounts. Each unmount that takes something
// away waits for an expedited RCU grace period, whose IPIs cost tens of
// microseconds in a virtual machine, where a move waits for none: so the
// other mounts are moved into fresh directories of the last mount when it
// is a tmpfs of the task's own (its /dev/shm), which goes with the task,
// and one unmount takes them all. The task's processes are gone: nothing
// else can reach these directories meanwhile. Where that cannot be done
// (the task used up the tmpfs's inodes, or took the names), each mount is
// unmounted by itself.
static void undo_mounts(struct rec *trecs, int ntrec)
{
	int last = -1, n = 0;
	for (int i = 0; i < ntrec; i++)
		if (trecs[i].tag == SVC_REC_MOUNT)
			last = i, n++;
	if (last < 0)
		return;
	const char *top = field(&trecs[last], 2), *fstype = field(&trecs[last], 3);
	int own = !strcmp(field(&trecs[last], 0), SVC_MNT_MOUNT) && fstype && !strcmp(fstype, "tmpfs");
	int moved = 0;
	for (int i = 0; own && i < last; i++) {
		if (trecs[i].tag != SVC_REC_MOUNT)
			continue;
		char dir[4096];
		int k = snprintf(dir, sizeof dir, "%s/.svc-undo-%d", top, moved);
		if (k >= (int)sizeof dir || mkdir(dir, 0) < 0 ||
		    syscall(SYS_move_mount, AT_FDCWD, field(&trecs[i], 2), AT_FDCWD, dir, 0) < 0)
			break;
		moved++;
	}
	if (umount2(top, MNT_DETACH) < 0)
		die("shell: undo mount", top);
	// The first ones were moved and went with it; the rest, one by one.
	for (int i = last - 1, left = n - 1 - moved; left > 0; i--) {
		if (trecs[i].tag != SVC_REC_MOUNT)
			continue;
		if (umount2(field(&trecs[i], 2), MNT_DETACH) < 0)
			die("shell: undo mount", field(&trecs[i], 2));
		left--;
	}
}

// shell_main is the init of a sandbox, PID 1 of its namespace, running as
// root of its user namespace: a shell, which builds the sandbox once from
// the cell frame and then runs one task after another in it (see struct
// svc_task). Each task gets its own IPC
// namespace, its cgroups, its workspace, /tmp and /dev/shm (its mount
// records) and its stdio; after it, every process of the namespace is
// killed and reaped, the task's mounts are undone and the PID sequence
// starts again at 2, so the next task finds what the first found. /proc
// is mounted with hidepid=invisible: a task sees its own processes only,
// not the shell. Anything unexpected ends the shell; the parent then
// makes another.
static int shell_main(void)
{
	size_t len;
	char *buf = read_frame(SVC_FD_CONFIG, &len);
	struct rec *recs;
	int nrec = parse(buf, len, &recs, 0);
	signal(SIGPIPE, SIG_IGN);
	if ((ctl = fcntl(SVC_FD_CONFIG, F_DUPFD_CLOEXEC, 32)) < 0)
		die("shell: control socket", NULL);
	close(SVC_FD_CONFIG);
	watch_control();
	setup(recs, nrec);
	if (last_pid < 0 || !limits_set) {
		errno = EINVAL;
		die("shell: no proc mount in the plan", NULL);
	}
	// A session of the shell's own, without a controlling terminal, for
	// its tasks (task_main).
	if (setsid() < 0)
		die("setsid", NULL);
	drop_bounding_set();
	// The base filter, which every task process inherits: from here on
	// the init makes only the calls initproc.ShellCalls lists. A watched
	// base comes with a listener, which goes to the parent before the
	// ready line; the init keeps no copy, and no task ever sees one.
	for (int i = 0; i < nrec; i++)
		if (recs[i].tag == SVC_REC_BASE || recs[i].tag == SVC_REC_BASE_WATCHED) {
			struct sock_fprog base = {
				.len = recs[i].len / sizeof(struct sock_filter),
				.filter = (struct sock_filter *)recs[i].data,
			};
			int watched = recs[i].tag == SVC_REC_BASE_WATCHED;
			int listener = install_filter(&base, watched);
			if (watched) {
				send_fd(ctl, SVC_SHELL_LISTENER, listener);
				close(listener);
			}
		}
	// Without the arena every allocation of a task is mapped apart.
	task_arena = mmap(NULL, TASK_ARENA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (task_arena == MAP_FAILED)
		task_arena = NULL;
	report(SVC_REC_READY, "");
	close(0);
	close(1);
	close(2);
	close(status_fd);

	for (;;) {
		char *tbuf = shell_recv(&len);
		if (!tbuf)
			return 0;
		struct rec *trecs;
		int ntrec = parse(tbuf, len, &trecs, 0);
		early_filter = (struct sock_fprog){0};
		early_watched = 0;
		for (int i = 0; i < ntrec; i++) {
			if (trecs[i].tag == SVC_REC_MOUNT) {
				apply_mount(&trecs[i]);
			} else if (trecs[i].tag == SVC_REC_FILTER || trecs[i].tag == SVC_REC_WATCHED) {
				early_filter = (struct sock_fprog){
					.len = trecs[i].len / sizeof(struct sock_filter),
					.filter = (struct sock_filter *)trecs[i].data,
				};
				early_watched = trecs[i].tag == SVC_REC_WATCHED;
			}
		}
		for (int i = 0; i < ntree; i++)
			close(tree_fd(i));
		watch(1);
		pid_t task = start_task(recs, nrec);
		close(SVC_FD_CONFIG);
		wait_task(task);
		close(status_fd);
		// Every process the task left: killed (all but this one) and
		// reaped, so none outlives it into the next task.
		kill(-1, SIGKILL);
		for (;;) {
			pid_t pid = waitpid(-1, NULL, __WALL);
			if (pid < 0 && errno == ECHILD)
				break;
			if (pid < 0 && errno != EINTR)
				die("waitpid", NULL);
		}
		char gone = SVC_SHELL_GONE;
		if (write(ctl, &gone, 1) != 1)
			return 0;
		watch(0);
		undo_mounts(trecs, ntrec);
		if (pwrite(last_pid, "1", 1, 0) != 1)
			die("shell: reset ns_last_pid", NULL);
		free(trecs);
		free(tbuf);
		char clean = SVC_SHELL_CLEAN;
		if (write(ctl, &clean, 1) != 1)
			return 0;
	}
}

// cell_child runs in the init right after clone3, still as the zygote's
// copy: it waits until the zygote has written its id maps, takes its fds
// 0-4, closes every other, and becomes root of its user namespace. The
// zygote never writes the go byte if anything failed, and its death (the
// read ends with EOF) stops the child as well.
static void __attribute__((noreturn)) cell_child(const int *fds, int sync_r, int sync_w)
{
	int tmp[5];
	char go;

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	prctl(PR_SET_NAME, "svc-init", 0, 0, 0);
	close(sync_w);
	for (int i = 0; i < 5; i++)
		if ((tmp[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 64)) < 0)
			_exit(SVC_EXIT_SETUP_FAILED);
	if (read(sync_r, &go, 1) != 1)
		_exit(SVC_EXIT_SETUP_FAILED);
	for (int i = 0; i < 5; i++)
		if (dup3(tmp[i], i, 0) < 0)
			_exit(SVC_EXIT_SETUP_FAILED);
	close_from(5);
	if (setresgid(0, 0, 0) < 0)
		die("setresgid", "0");
	if (setresuid(0, 0, 0) < 0)
		die("setresuid", "0");
	// Again: a change of the effective or filesystem ids clears the
	// parent-death signal (prctl(2)), and with other id maps the change
	// above would. The init makes none after this. A parent dead before
	// this line is told by the control socket (watch_control).
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		die("prctl", "parent-death signal");
	_exit(shell_main());
}

// The zygote.

// zreply answers a spawn request: the init's pid and pidfd; or an error,
// with the pid and pidfd of an init that was made and killed.
static void zreply(pid_t pid, int pidfd, int err, const char *fmt, ...)
{
	struct svc_spawn_reply rep = {.pid = pid, .err = err};
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(rep.msg, sizeof rep.msg, fmt, ap);
		va_end(ap);
	}
	struct iovec iov = {.iov_base = &rep, .iov_len = sizeof rep};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	if (pidfd >= 0) {
		msg.msg_control = u.buf;
		msg.msg_controllen = sizeof u.buf;
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pidfd, sizeof(int));
	}
	while (sendmsg(SVC_FD_ZYGOTE, &msg, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

// write_file writes s to /proc/<pid>/<name> in one write.
static int write_proc(pid_t pid, const char *name, const char *s)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", pid, name);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, s, strlen(s));
	int err = errno;
	close(fd);
	errno = err;
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

// zparent is the zygote's parent, the service.
static pid_t zparent;

// zspawn serves one spawn request: clone3 the init into fresh user,
// mount, PID, IPC and UTS namespaces and the given network namespace, map
// its ids and release it. Its task process joins the task's cgroups itself
// (join_cgroups): the init stays in the zygote's.
static void zspawn(int hostnet, const struct svc_spawn *req, const int *fds, int nfds)
{
	int want = 6;
	if (req->version != SVC_SPAWN_VERSION || req->flags != 0 || nfds != want) {
		zreply(-1, -1, EINVAL, "bad spawn request (version %u, flags %u, %d fds, want %d)",
		       req->version, req->flags, nfds, want);
		return;
	}
	int sync[2];
	if (pipe2(sync, O_CLOEXEC) < 0) {
		zreply(-1, -1, errno, "sync pipe: %s", strerror(errno));
		return;
	}
	if (setns(fds[5], CLONE_NEWNET) < 0) {
		zreply(-1, -1, errno, "enter the task's network namespace: %s", strerror(errno));
		close(sync[0]);
		close(sync[1]);
		return;
	}
	int pidfd = -1;
	struct clone_args ca;
	memset(&ca, 0, sizeof ca);
	// CLONE_PARENT: the init is the parent's child, not ours, so the
	// parent reaps it (and no zombie of it waits for us) and its
	// PR_SET_PDEATHSIG follows the parent. exit_signal is then ours.
	ca.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
		   CLONE_PIDFD | CLONE_PARENT;
	ca.pidfd = (uintptr_t)&pidfd;
	// The user namespace is made by the init's own host id, not by root:
	// the kernel counts per user what the sandbox's processes hold
	// (inotify instances and watches, message queue bytes, queued
	// signals, locked shared memory, namespaces: ucounts) in their user
	// namespace and again in each namespace above it, against the user
	// that made the one below. Made by root, a task's inotify instances
	// and message queues are root's on the host, and a task that takes a
	// host user's share takes root's and every other request's. Made by
	// the init's id, they are its request's alone. The zygote keeps its
	// capabilities meanwhile (SECBIT_NO_SETUID_FIXUP), so the clone is a
	// privileged one wherever the host restricts unprivileged user
	// namespaces.
	pid_t pid = -1;
	int cerr = 0;
	if (setresgid(-1, req->init_uid, -1) < 0 || setresuid(-1, req->init_uid, -1) < 0) {
		cerr = errno;
	} else {
		pid = syscall(SYS_clone3, &ca, sizeof ca);
		if (pid == 0)
			cell_child(fds, sync[0], sync[1]);
		cerr = errno;
	}
	// Root again, or no zygote: the parent starts another. The ids'
	// change cleared the parent-death signal: set again, and if the
	// parent died meanwhile, no zygote either.
	if (setresuid(-1, 0, -1) < 0 || setresgid(-1, 0, -1) < 0 ||
	    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != zparent) {
		if (pid > 0)
			kill(pid, SIGKILL);
		_exit(SVC_EXIT_SETUP_FAILED);
	}
	// Never clone into a used network namespace again: a zygote that
	// cannot return to its own dies, and the parent starts another.
	if (setns(hostnet, CLONE_NEWNET) < 0) {
		if (pid > 0)
			kill(pid, SIGKILL);
		_exit(SVC_EXIT_SETUP_FAILED);
	}
	close(sync[0]);
	if (pid < 0) {
		zreply(-1, -1, cerr, "clone3 as uid %u: %s", req->init_uid, strerror(cerr));
		close(sync[1]);
		return;
	}

	char map[128];
	const char *what = "setgroups";
	int ok = write_proc(pid, "setgroups", "deny") == 0;
	if (ok) {
		what = "uid_map";
		snprintf(map, sizeof map, "0 %u 1\n%u %u 1\n", req->init_uid, req->inner_uid, req->task_uid);
		ok = write_proc(pid, "uid_map", map) == 0;
	}
	if (ok) {
		what = "gid_map";
		snprintf(map, sizeof map, "0 %u 1\n%u %u 1\n", req->init_uid, req->inner_gid, req->task_uid);
		ok = write_proc(pid, "gid_map", map) == 0;
	}
	if (!ok || write(sync[1], "1", 1) != 1) {
		// The killed init is the parent's child: the answer carries its
		// pidfd with the error, for the parent to reap it.
		int err = errno;
		kill(pid, SIGKILL);
		close(sync[1]);
		zreply(pid, pidfd, err ? err : EIO, "%s of the sandbox init: %s", what, strerror(err));
		close(pidfd);
		return;
	}
	close(sync[1]);
	zreply(pid, pidfd, 0, NULL);
	close(pidfd);
}

// zserve reads and serves one request; it returns 0 when the parent is
// gone (EOF) or the socket broke.
static int zserve(int hostnet)
{
	struct svc_spawn req;
	struct iovec iov = {.iov_base = &req, .iov_len = sizeof req};
	union {
		char buf[CMSG_SPACE(SVC_SPAWN_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	ssize_t n = recvmsg(SVC_FD_ZYGOTE, &msg, MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n <= 0)
		return 0;
	int fds[SVC_SPAWN_MAX_FDS], nfds = received_fds(&msg, fds);
	if (n != sizeof req || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		zreply(-1, -1, EINVAL, "malformed spawn request");
	else
		zspawn(hostnet, &req, fds, nfds);
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	return 1;
}

// zygote_main serves spawn requests on fd 3 until the parent closes it.
// It runs as root of the host with no supplementary groups (a child in a
// new user namespace keeps them, and with setgroups denied there could
// never drop them). It has no children to reap: the inits are its
// parent's (CLONE_PARENT).
static int zygote_main(void)
{
	prctl(PR_SET_NAME, "svc-zygote", 0, 0, 0);
	// If the parent died before this line, the socket's EOF ends us.
	zparent = getppid();
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (setgroups(0, NULL) < 0)
		return SVC_EXIT_SETUP_FAILED;
	// Capabilities stay as the effective uid changes for each clone
	// (zspawn); a new user namespace starts with no securebits.
	if (prctl(PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP, 0, 0, 0) < 0)
		return SVC_EXIT_SETUP_FAILED;
	int hostnet = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (hostnet < 0)
		return SVC_EXIT_SETUP_FAILED;
	while (zserve(hostnet))
		;
	return 0;
}

__attribute__((constructor)) static void svc_zygote(int argc, char **argv, char **envp)
{
	(void)envp;
	if (argc < 1 || strcmp(argv[0], SVC_ZYGOTE_ARG0) != 0)
		return;
	_exit(zygote_main());
}
