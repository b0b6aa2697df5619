// network.c: the task's network. Arguments: a TCP port the test listens on
// at the host's 127.0.0.1, the name of an abstract unix socket the test
// listens on, then IPv4 addresses outside the task.
#include "probe.h"
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stddef.h>
#include <sys/un.h>

static int tcp_connect(const char *ip, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1) {
		errno = EINVAL;
		return -1;
	}
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	return connect(fd, (struct sockaddr *)&sa, sizeof sa);
}

static int abstract_connect(const char *name)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(name);
	if (n + 1 > sizeof sa.sun_path) {
		errno = EINVAL;
		return -1;
	}
	memcpy(sa.sun_path + 1, name, n);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	return connect(fd, (struct sockaddr *)&sa, offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

// loopback listens on 127.0.0.1 and connects to itself: the task's own
// loopback works.
static int loopback(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof sa;
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&sa, &len) < 0)
		return -1;
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&sa, sizeof sa) < 0)
		return -1;
	return accept4(l, NULL, NULL, SOCK_CLOEXEC);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	// Interface names of /proc/net/dev (two header lines, then "name: ...").
	char buf[65536], names[4096] = "";
	if (slurp("/proc/net/dev", buf, sizeof buf) < 0)
		return 3;
	char *line = strtok(buf, "\n");
	for (int i = 0; line; i++, line = strtok(NULL, "\n")) {
		if (i < 2)
			continue;
		while (*line == ' ')
			line++;
		char *colon = strchr(line, ':');
		if (colon)
			*colon = 0;
		snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", *names ? " " : "", line);
	}
	fact("interfaces", "%s", names);

	int port = atoi(argv[1]);
	PROBE("connect host 127.0.0.1 port", tcp_connect("127.0.0.1", port));
	PROBE("connect host abstract socket", abstract_connect(argv[2]));
	for (int i = 3; i < argc; i++) {
		char name[128];
		snprintf(name, sizeof name, "connect %s", argv[i]);
		PROBE(name, tcp_connect(argv[i], port));
	}
	PROBE("loopback", loopback());
	PROBE("raw socket", socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_TCP));
	PROBE("packet socket", socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL)));
	return 0;
}
