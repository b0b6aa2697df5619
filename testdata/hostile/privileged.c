// privileged.c: writes to read-only places and privileged operations, then
// the same from a nested user namespace when the kernel allows creating
// one. Argument: the absolute path of a marker file on the host.
#include "probe.h"
#include <sys/io.h>
#include <sys/klog.h>
#include <sys/pidfd.h>
#include <sys/ptrace.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>

static const char *marker;

// flags prints the mount flags of path as a fact.
static void flags(const char *path)
{
	struct statvfs sv;
	char key[128];
	snprintf(key, sizeof key, "flags %s", path);
	if (statvfs(path, &sv) < 0) {
		fact(key, "%s", strerrorname_np(errno));
		return;
	}
	fact(key, "%s%s%s%s", sv.f_flag & ST_RDONLY ? "ro" : "rw", sv.f_flag & ST_NOSUID ? " nosuid" : "",
	     sv.f_flag & ST_NODEV ? " nodev" : "", sv.f_flag & ST_NOEXEC ? " noexec" : "");
}

// rewrite writes back the current content of a file: harmless if it
// succeeds, and it proves the file writable.
static int rewrite(const char *path)
{
	char buf[4096];
	if (slurp(path, buf, sizeof buf) < 0)
		return -1;
	return writefile(path, buf);
}

static int readlink1(const char *path)
{
	char buf[PATH_MAX];
	return readlink(path, buf, sizeof buf);
}

static int vm_read(pid_t pid)
{
	char buf[8];
	struct iovec local = {buf, sizeof buf}, remote = {(void *)0x400000, sizeof buf};
	return process_vm_readv(pid, &local, 1, &remote, 1, 0);
}

static int getfd(pid_t pid, int fd)
{
	int p = pidfd_open(pid, 0);
	if (p < 0)
		return -1;
	return pidfd_getfd(p, fd, 0);
}

static int settime(void)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	return clock_settime(CLOCK_REALTIME, &now);
}

static int raise_nofile(void)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_max++;
	rl.rlim_cur = rl.rlim_max;
	return setrlimit(RLIMIT_NOFILE, &rl);
}

static int under(const char *dir)
{
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s%s", dir, marker);
	return readsome(p);
}

static int rw_setattr(const char *path)
{
	struct mount_attr a = {.attr_clr = MOUNT_ATTR_RDONLY};
	return mount_setattr(AT_FDCWD, path, 0, &a, sizeof a);
}

// listing returns the sorted names of directory path, space-separated.
static const char *listing(const char *path)
{
	static char out[4096];
	char names[128][256];
	int n = 0;
	DIR *d = opendir(path);
	if (!d)
		return strerrorname_np(errno);
	for (struct dirent *e; (e = readdir(d)) && n < 128;)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			snprintf(names[n++], sizeof names[0], "%s", e->d_name);
	closedir(d);
	qsort(names, n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
	out[0] = 0;
	for (int i = 0; i < n; i++)
		snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", i ? " " : "", names[i]);
	return out;
}

// escape is the classic chroot escape: chroot into a subdirectory while
// the working directory stays outside, climb, and chroot there. It reports
// what "/" is afterwards and fails with ENOENT if the marker is not found.
static int escape(void)
{
	mkdir("/tmp/jail", 0755);
	if (chroot("/tmp/jail") < 0)
		return -1;
	for (int i = 0; i < 64; i++)
		if (chdir("..") < 0)
			return -1;
	if (chroot(".") < 0)
		return -1;
	fact("nested escaped root", "%s", listing("/"));
	return readsome(marker);
}

// release_agent mounts the first cgroup v1 hierarchy that the nested
// cgroup namespace lets it mount and writes the hierarchy's release_agent,
// the program the host's kernel runs as root when a cgroup empties
// (CVE-2022-0492). The mount's errno is its result when none mounts.
static int release_agent(void)
{
	const char *h[] = {"devices", "freezer", "blkio", "cpuset", "pids", "memory", "cpu", "net_cls",
			   "perf_event", "hugetlb", "rdma", "misc", "name=systemd"};
	for (size_t i = 0; i < sizeof h / sizeof *h; i++) {
		char dir[64], agent[96];
		snprintf(dir, sizeof dir, "/tmp/cgroup-%zu", i);
		mkdir(dir, 0755);
		if (mount("none", dir, "cgroup", 0, h[i]) < 0)
			continue;
		fact("nested cgroup v1 hierarchy", "%s", h[i]);
		snprintf(agent, sizeof agent, "%s/release_agent", dir);
		return writefile(agent, "/svc/agent\n");
	}
	return -1;
}

static void nested(void)
{
	pid_t pid = fork();
	if (pid != 0) {
		probe_report("nested", pid);
		return;
	}
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWCGROUP) < 0) {
		fact("nested unshare", "%s", strerrorname_np(errno));
		_exit(0);
	}
	fact("nested unshare", "ok");
	writefile("/proc/self/setgroups", "deny\n");
	if (writefile("/proc/self/uid_map", "0 1000 1\n") < 0 || writefile("/proc/self/gid_map", "0 1000 1\n") < 0)
		fact("nested id maps", "%s", strerrorname_np(errno));
	mkdir("/tmp/nested-proc", 0755);
	mkdir("/tmp/nested-sys", 0755);
	PROBE("nested umount /proc/kallsyms", umount2("/proc/kallsyms", MNT_DETACH));
	PROBE("nested umount /proc/sys", umount2("/proc/sys", MNT_DETACH));
	PROBE("nested remount /usr rw", mount(NULL, "/usr", NULL, MS_REMOUNT | MS_BIND, NULL));
	PROBE("nested setattr /usr rw", rw_setattr("/usr"));
	PROBE("nested remount / rw", mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL));
	PROBE("nested setattr / rw", rw_setattr("/"));
	PROBE("nested mount proc", mount("proc", "/tmp/nested-proc", "proc", 0, NULL));
	PROBE("nested mount sysfs", mount("sysfs", "/tmp/nested-sys", "sysfs", 0, NULL));
	PROBE("nested mknod /tmp/cdev", mknod("/tmp/nested-cdev", S_IFCHR | 0666, makedev(1, 3)));
	PROBE("nested /proc/1/root marker", under("/proc/1/root"));
	PROBE("nested chroot escape", escape());
	PROBE("nested cgroup release_agent", release_agent());
	_exit(0);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	marker = argv[1];

	const char *mounts[] = {"/", "/usr", "/etc", "/svc", "/tmp", "/dev", "/dev/shm", "/dev/null", "/proc", "/proc/sys"};
	for (size_t i = 0; i < sizeof mounts / sizeof *mounts; i++)
		flags(mounts[i]);

	PROBE("create /usr/x", create("/usr/svc-probe"));
	PROBE("create /etc/x", create("/etc/svc-probe"));
	PROBE("create /x", create("/svc-probe"));
	PROBE("create /dev/x", create("/dev/svc-probe"));
	PROBE("mkdir /usr/x", mkdir("/usr/svc-probe", 0755));
	PROBE("write /etc/passwd", rewrite("/etc/passwd"));
	PROBE("write /proc/sys/kernel/hostname", rewrite("/proc/sys/kernel/hostname"));
	PROBE("write /proc/sys/kernel/core_pattern", rewrite("/proc/sys/kernel/core_pattern"));
	PROBE("write /proc/sys/vm/drop_caches", writefile("/proc/sys/vm/drop_caches", "1\n"));
	PROBE("mknod /svc/cdev", mknod("/svc/cdev", S_IFCHR | 0666, makedev(1, 3)));
	PROBE("mknod /tmp/cdev", mknod("/tmp/cdev", S_IFCHR | 0666, makedev(1, 3)));
	PROBE("mknod /dev/shm/bdev", mknod("/dev/shm/bdev", S_IFBLK | 0666, makedev(8, 0)));
	PROBE("chroot /tmp", chroot("/tmp"));
	PROBE("sethostname", sethostname("evil", 4));
	PROBE("setdomainname", setdomainname("evil", 4));
	PROBE("mount tmpfs", mount("tmpfs", "/tmp", "tmpfs", 0, NULL));
	PROBE("mount proc", mount("proc", "/tmp", "proc", 0, NULL));
	PROBE("remount / rw", mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL));
	PROBE("setattr /usr rw", rw_setattr("/usr"));
	PROBE("umount /proc/sys", umount2("/proc/sys", MNT_DETACH));
	PROBE("umount /proc/kallsyms", umount2("/proc/kallsyms", MNT_DETACH));
	PROBE("pivot_root", syscall(SYS_pivot_root, "/tmp", "/tmp"));
	PROBE("open_tree clone /", open_tree(AT_FDCWD, "/", OPEN_TREE_CLONE));
	PROBE("unshare(CLONE_NEWNS)", unshare(CLONE_NEWNS));
	PROBE("unshare(CLONE_NEWNET)", unshare(CLONE_NEWNET));
	PROBE("open /proc/1/ns/mnt", open("/proc/1/ns/mnt", O_RDONLY));

	PROBE("kill(1, SIGKILL)", kill(1, SIGKILL));
	PROBE("ptrace attach 1", ptrace(PTRACE_ATTACH, 1, 0, 0));
	PROBE("process_vm_readv 1", vm_read(1));
	PROBE("pidfd_getfd 1 status fd", getfd(1, 4));
	PROBE("open /proc/1/root/etc/passwd", open("/proc/1/root/etc/passwd", O_RDONLY));
	PROBE("/proc/1/root marker", under("/proc/1/root"));
	PROBE("/proc/1/cwd marker", under("/proc/1/cwd"));
	PROBE("/proc/self/root marker", under("/proc/self/root"));
	PROBE("readlink /proc/1/exe", readlink1("/proc/1/exe"));
	PROBE("readlink /proc/1/cwd", readlink1("/proc/1/cwd"));
	PROBE("readlink /proc/1/root", readlink1("/proc/1/root"));
	PROBE("open /proc/1/exe O_WRONLY", open("/proc/1/exe", O_WRONLY));
	PROBE("open /proc/1/environ", open("/proc/1/environ", O_RDONLY));
	PROBE("open /proc/1/mem", open("/proc/1/mem", O_RDONLY));
	PROBE("open /proc/1/fd/4", open("/proc/1/fd/4", O_WRONLY));

	char klog[256];
	PROBE("syslog read all", klogctl(3 /* SYSLOG_ACTION_READ_ALL */, klog, sizeof klog));
	PROBE("reboot CAD off", reboot(RB_DISABLE_CAD));
	PROBE("init_module", syscall(SYS_init_module, NULL, 0, ""));
	PROBE("clock_settime", settime());
	PROBE("iopl(3)", iopl(3));
	PROBE("raise RLIMIT_NOFILE", raise_nofile());
	PROBE("setpriority -1", setpriority(PRIO_PROCESS, 0, -1));

	nested();
	return 0;
}
