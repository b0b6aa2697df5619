package scaleout

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/svc-sandbox/svc/client"
)

// cluster is what TestScaleOut runs: Redis, the instances sharing it as
// their step cache, nginx in front, and a client of nginx whose every
// attempt is recorded.
type cluster struct {
	redis     *redisProc
	instances []*instance
	nginx     *nginxProc
	ns        string // CACHE_NAMESPACE
	key       string // API key
	rec       *recorder
	c         *client.Client // through nginx
}

// numInstances is how many svc serve run behind nginx: three, so that two
// remain once one was stopped.
const numInstances = 3

// uidBase is the SANDBOX_UID_BASE of instance i: blocks of 64Ki ids from
// 600M, a region per test process chosen by its pid, away from the
// ranges of the other packages' tests (svctest 4M..272M, cmd/svc 300M..).
func uidBase(i int) int {
	return 600_000_000 + (os.Getpid()%4096)*numInstances*64*1024 + i*64*1024
}

func startCluster(t *testing.T) *cluster { return startClusterEnv(t, "scaleout") }

// startClusterEnv starts Redis, numInstances svc serve with the settings
// of extra too, and nginx before them, under the cache namespace
// ns-<random>.
func startClusterEnv(t *testing.T, ns string, extra ...string) *cluster {
	t.Helper()
	nginxBin, redisBin := requirements(t)
	start := time.Now()
	root := moduleRoot(t)
	bin := buildSvc(t, root)
	t.Logf("built svc in %v", time.Since(start).Round(time.Millisecond))

	cl := &cluster{ns: ns + "-" + randomHex(8), key: randomHex(16), rec: newRecorder()}
	cl.redis = startRedis(t, redisBin)
	common := append([]string{
		"API_KEYS=" + cl.key,
		"CACHE_URL=redis://" + cl.redis.addr + "/0",
		"CACHE_NAMESPACE=" + cl.ns,
		// Every limit is part of the cache key: the same on every
		// instance. More slots than the load of SIGTERMUnderLoad could
		// ever put on one instance: no capacity_exhausted there.
		"MAX_CONCURRENCY=8",
		"SHUTDOWN_TIMEOUT_MS=" + strconv.FormatInt(shutdownTimeout.Milliseconds(), 10),
	}, extra...)
	var upstreams []string
	for i := range numInstances {
		env := append(slices.Clone(common), "SANDBOX_UID_BASE="+strconv.Itoa(uidBase(i)))
		in := startInstance(t, bin, fmt.Sprintf("svc%d", i), env, cl.key)
		cl.instances = append(cl.instances, in)
		upstreams = append(upstreams, in.addr)
	}
	cl.nginx = startNginx(t, nginxBin, root, upstreams)
	var err error
	cl.c, err = client.New(client.Config{URL: cl.nginx.url, Key: cl.key, HTTPClient: &http.Client{Transport: cl.rec}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("nginx access log:\n%s", cl.nginx.log("access.log"))
			t.Logf("nginx error log:\n%s", cl.nginx.log("error.log"))
			for _, in := range cl.instances {
				t.Logf("%s (%s) log:\n%s", in.name, in.addr, in.out)
			}
		}
	})
	t.Logf("started redis, %d instances and nginx in %v", numInstances, time.Since(start).Round(time.Millisecond))
	return cl
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// ctx returns a context for one step of a scenario.
func ctx(t *testing.T, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

// TestScaleOut runs the scenarios against one cluster, in order: the
// fifth stops an instance, the sixth Redis.
func TestScaleOut(t *testing.T) {
	start := time.Now()
	cl := startCluster(t)
	cl.checkInfo(t)
	steps := []struct {
		name string
		f    func(*testing.T, *cluster)
	}{
		{"ReplayAcrossInstances", testReplayAcrossInstances},
		{"OutputsAcrossInstances", testOutputsAcrossInstances},
		{"FileOnAnotherInstance", testFileOnAnotherInstance},
		{"DropCacheForAll", testDropCacheForAll},
		{"SIGTERMUnderLoad", testSIGTERMUnderLoad},
		{"RedisStopped", testRedisStopped},
	}
	for _, s := range steps {
		t0 := time.Now()
		t.Run(s.name, func(t *testing.T) { s.f(t, cl) })
		t.Logf("%s took %v", s.name, time.Since(t0).Round(time.Millisecond))
	}
	t.Logf("scale-out test took %v", time.Since(start).Round(time.Millisecond))
}
