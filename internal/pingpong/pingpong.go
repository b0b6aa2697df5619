// Package pingpong holds the pinger of the interactive round-trip
// benchmarks (svc bench's interactive figure and internal/runner's
// ping-pong benchmarks): a C program that writes a line and reads it back
// N times (argv[1], default 10000), through whatever its standard output
// and input are joined by, and prints on stderr the nanoseconds of a
// round trip on average. It exits 2, 3 or 4 when a write fails, the
// echo ends early or comes back different.
package pingpong

// Source is the pinger's C source.
const Source = `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 10000;
	char line[32], buf[64];
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++) {
		int k = snprintf(line, sizeof line, "%d\n", i);
		if (write(1, line, k) != k)
			return 2;
		for (int got = 0; got < k;) {
			ssize_t r = read(0, buf + got, sizeof buf - got);
			if (r <= 0)
				return 3;
			got += r;
		}
		if (memcmp(buf, line, k) != 0)
			return 4;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "%lld\n", ((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec)) / n);
	return 0;
}
`
