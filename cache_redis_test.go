package svc_test

// The step cache on a real redis-server (the Debian package), started on
// loopback by each test (.ci/run installs it). Without redis-server the
// tests skip, except in CI (CI set), where they fail.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-sandbox/svc"
)

// testRedis is a redis-server of one test.
type testRedis struct {
	URL  string // redis://127.0.0.1:<port>/0
	Addr string
	cmd  *exec.Cmd
	done chan struct{}
}

// startRedis starts a redis-server on a free loopback port, without
// persistence, waits until it answers PING, and stops it at cleanup.
func startRedis(t testing.TB) *testRedis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is not installed (apt-get install redis-server): %v", err)
		}
		t.Skipf("redis-server is not installed (apt-get install redis-server); the Redis cache is not tested: %v", err)
	}
	// A free port: the kernel's choice, released for redis-server. Another
	// process could take it meanwhile; redis-server then fails and the
	// test says so.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	r := &testRedis{Addr: fmt.Sprintf("127.0.0.1:%d", port), done: make(chan struct{})}
	r.URL = "redis://" + r.Addr + "/0"
	var out strings.Builder
	r.cmd = exec.Command(bin, "--bind", "127.0.0.1", "--port", fmt.Sprint(port),
		"--save", "", "--appendonly", "no", "--dir", t.TempDir(), "--protected-mode", "yes")
	r.cmd.Stdout, r.cmd.Stderr = &out, &out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(r.Stop)
	c := redis.NewClient(&redis.Options{Addr: r.Addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return r
		}
		select {
		case <-r.done:
			t.Fatalf("redis-server exited: %v\n%s", r.cmd.ProcessState, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server does not answer PING: %v\n%s", err, out.String())
		}
	}
}

// Stop kills the server and waits for it to be gone.
func (r *testRedis) Stop() {
	r.cmd.Process.Kill()
	<-r.done
}

func (r *testRedis) client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.Addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestCacheRedisShared: two instances (Sandboxes with caches of their own)
// on one Redis replay each other's layers, and a drop by one is a drop for
// both.
func TestCacheRedisShared(t *testing.T) {
	r := startRedis(t)
	c1 := newCache(t, svc.CacheConfig{URL: r.URL})
	c2 := newCache(t, svc.CacheConfig{URL: r.URL})
	sb1 := newCacheSandbox(t, c1, svc.Config{})
	sb2 := newCacheSandbox(t, c2, svc.Config{})
	if kind, ns, _ := c1.Info(); kind != "redis" || ns != "default" {
		t.Errorf("info %s %s", kind, ns)
	}
	req := cached(
		svc.Single(sh("echo from one > f; mkdir d; ln -s ../f d/l")),
		svc.Single(sh("cat d/l; rm f")),
		svc.Single(noCache(sh("ls -A; readlink d/l"))),
	)
	first := runReq(t, sb1, req)
	wantSummary(t, first, 0, 2)
	second := runReq(t, sb2, req)
	wantSummary(t, second, 2, 0)
	sameResults(t, &svc.Response{Results: first.Results[:2]}, &svc.Response{Results: second.Results[:2]})
	if got := stdout(second, 2); got != "d\n../f\n" {
		t.Errorf("after the replay: %q", got)
	}

	// The layers expire on the server, TTL after their last use.
	keys, err := r.client(t).Keys(context.Background(), "svc:cache:default:*").Result()
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys %q, %v", keys, err)
	}
	for _, k := range keys {
		ttl, err := r.client(t).TTL(context.Background(), k).Result()
		if err != nil || ttl <= 23*time.Hour || ttl > 24*time.Hour {
			t.Errorf("TTL of %s: %v, %v", k, ttl, err)
		}
	}

	// Another namespace on the same server is another store.
	c3 := newCache(t, svc.CacheConfig{URL: r.URL, Namespace: "other"})
	sb3 := newCacheSandbox(t, c3, svc.Config{})
	wantSummary(t, runReq(t, sb3, req), 0, 2)

	n, err := c2.Drop(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("Drop: %d, %v", n, err)
	}
	wantSummary(t, runReq(t, sb1, req), 0, 2)
	wantSummary(t, runReq(t, sb3, req), 2, 0)
	for _, c := range []*svc.StepCache{c1, c2, c3} {
		if s := c.Stats(); s.Errors != 0 {
			t.Errorf("stats %+v", s)
		}
	}
}

// TestCacheRedisTTL: a short TTL expires layers on the server's clock.
func TestCacheRedisTTL(t *testing.T) {
	r := startRedis(t)
	c := newCache(t, svc.CacheConfig{URL: r.URL, TTL: 1500 * time.Millisecond})
	sb := newCacheSandbox(t, c, svc.Config{})
	req := cached(svc.Single(sh("echo hi")))
	wantSummary(t, runReq(t, sb, req), 0, 1)
	keys, err := r.client(t).Keys(context.Background(), "svc:cache:default:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys %q, %v", keys, err)
	}
	pttl, err := r.client(t).PTTL(context.Background(), keys[0]).Result()
	if err != nil || pttl <= 0 || pttl > 1500*time.Millisecond {
		t.Fatalf("PTTL %v, %v", pttl, err)
	}
	// Wait for the server to expire it (its clock, not ours).
	for {
		n, err := r.client(t).Exists(context.Background(), keys[0]).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	wantSummary(t, runReq(t, sb, req), 0, 1)
}

// TestCacheRedisDown: Redis stopped in the middle of a request, and
// gone for the requests after: hits become misses, stores fail, the
// requests succeed, and the failures are counted.
func TestCacheRedisDown(t *testing.T) {
	r := startRedis(t)
	c := newCache(t, svc.CacheConfig{URL: r.URL})
	sb := newCacheSandbox(t, c, svc.Config{})
	warm := cached(svc.Single(sh("echo one > f")))
	wantSummary(t, runReq(t, sb, warm), 0, 1)

	// Step 0 replays; Redis goes while step 1 runs; its store fails.
	req := cached(svc.Single(sh("echo one > f")), svc.Single(sh("sleep 1; cat f")))
	hits := c.Stats().Hits
	type result struct {
		resp *svc.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := sb.Run(context.Background(), req)
		done <- result{resp, err}
	}()
	for c.Stats().Hits == hits {
		time.Sleep(5 * time.Millisecond)
	}
	r.Stop()
	res := <-done
	if res.err != nil {
		t.Fatalf("Run with Redis gone: %v", res.err)
	}
	wantSummary(t, res.resp, 1, 0)
	if got := stdout(res.resp, 1); got != "one\n" {
		t.Errorf("stdout %q", got)
	}
	errs := c.Stats().Errors
	if errs == 0 {
		t.Errorf("no error counted: %+v", c.Stats())
	}

	// Later requests: misses, executed, nothing stored.
	for range 3 {
		resp := runReq(t, sb, req)
		wantSummary(t, resp, 0, 0)
		if got := stdout(resp, 1); got != "one\n" {
			t.Errorf("stdout %q", got)
		}
	}
	if _, err := c.Drop(context.Background()); !errors.Is(err, svc.ErrInternal) {
		t.Errorf("Drop with Redis gone: %v", err)
	}
}

// TestCacheRedisUnreachableAtOpen: OpenCache succeeds, and requests run.
func TestCacheRedisUnreachableAtOpen(t *testing.T) {
	requireRoot(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := newCache(t, svc.CacheConfig{URL: "redis://" + addr + "/0"})
	sb := newCacheSandbox(t, c, svc.Config{})
	resp := runReq(t, sb, cached(svc.Single(sh("echo hi"))))
	wantSummary(t, resp, 0, 0)
	if s := c.Stats(); s.Misses != 1 {
		t.Errorf("stats %+v", s)
	}
}
