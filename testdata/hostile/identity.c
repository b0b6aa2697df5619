// identity.c: who the task is, which capabilities it holds, and its
// attempts to become someone else.
#include "probe.h"
#include <grp.h>
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>

// dump prints each line of path as a fact "<prefix>\t<line>".
static void dump(const char *prefix, const char *path)
{
	static char buf[65536];
	if (slurp(path, buf, sizeof buf) < 0) {
		fact(prefix, "unreadable %s", strerrorname_np(errno));
		return;
	}
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
		fact(prefix, "%s", line);
}

static int raise_caps(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {{~0u, ~0u, ~0u}, {~0u, ~0u, ~0u}};
	return syscall(SYS_capset, &hdr, data);
}

// fsuid0 reports whether setfsuid(0) took effect (setfsuid never fails;
// it returns the previous value): EPERM when it did not.
static int fsuid0(void)
{
	setfsuid(0);
	if (setfsuid(-1) == 0)
		return 0;
	errno = EPERM;
	return -1;
}

int main(void)
{
	dump("self", "/proc/self/status");
	dump("init", "/proc/1/status");
	dump("setgroups", "/proc/self/setgroups");
	dump("uid_map", "/proc/self/uid_map");
	dump("gid_map", "/proc/self/gid_map");
	fact("ids", "%d %d %d %d %d", getuid(), geteuid(), getgid(), getegid(), getgroups(0, NULL));

	gid_t zero = 0;
	PROBE("setgroups(0, NULL)", setgroups(0, NULL));
	PROBE("setgroups([0])", setgroups(1, &zero));
	PROBE("setuid(0)", setuid(0));
	PROBE("setgid(0)", setgid(0));
	PROBE("setresuid(0, 0, 0)", setresuid(0, 0, 0));
	PROBE("setresgid(0, 0, 0)", setresgid(0, 0, 0));
	PROBE("setfsuid(0)", fsuid0());
	PROBE("capset(all)", raise_caps());
	PROBE("ambient raise CAP_SYS_ADMIN", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN, 0, 0));
	PROBE("clear no_new_privs", prctl(PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0));
	PROBE("write uid_map", writefile("/proc/self/uid_map", "0 0 1\n"));
	PROBE("write setgroups", writefile("/proc/self/setgroups", "allow\n"));
	return 0;
}
