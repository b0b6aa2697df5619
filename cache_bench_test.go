package svc_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
)

// BenchmarkCacheCompileRun is a two-step request, gcc compiling a C
// program and the program running, every step cacheable:
//
//	nocache   the cache disabled
//	cold      every request a miss (a new key each time): run, capture, store
//	replayed  every request replays both steps
//
// Each reports the median of its requests as median_ms too.
func BenchmarkCacheCompileRun(b *testing.B) {
	c := newCache(b, svc.CacheConfig{})
	sb := newCacheSandbox(b, c, svc.Config{})
	plain := newSandbox(b, svc.Config{})
	const src = `#include <stdio.h>
int main(void) { for (int i = 0; i < 3; i++) printf("hello %d\n", i); return 0; }`
	req := func(salt string) *svc.Request {
		return cached(
			svc.Single(svc.Task{Cmd: "gcc", Args: []string{"-O2", "-o", "prog", "prog.c"},
				Env: map[string]string{"SALT": salt}, Files: map[string]svc.File{"prog.c": {Content: src}}}),
			svc.Single(svc.Task{Cmd: "./prog", SandboxProfile: svc.ProfileNativeV2}),
		)
	}
	bench := func(sb *svc.Sandbox, salt func(i int) string, replayed, stored int) func(b *testing.B) {
		return func(b *testing.B) {
			var times []time.Duration
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				resp := runReq(b, sb, req(salt(i)))
				times = append(times, time.Since(start))
				if got := stdout(resp, 1); got != "hello 0\nhello 1\nhello 2\n" {
					b.Fatalf("stdout %q\n%+v", got, resp.Results)
				}
				if resp.Cache.ReplayedSteps != replayed || resp.Cache.StoredSteps != stored {
					b.Fatalf("cache summary %+v", resp.Cache)
				}
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "median_ms")
		}
	}
	run, n := time.Now().UnixNano(), 0
	b.Run("nocache", bench(plain, func(int) string { return "" }, 0, 0))
	b.Run("cold", bench(sb, func(int) string { n++; return fmt.Sprint(run, "-", n) }, 0, 2))
	runReq(b, sb, req("warm"))
	b.Run("replayed", bench(sb, func(int) string { return "warm" }, 2, 0))
}
