package scaleout

// The scenarios of TestScaleOut. Each observes which instance answered:
// the X-Upstream-Addr nginx adds to every response (recorded per attempt
// by the client's transport), confirmed by the instances' own counters.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/client"
)

// checkInfo checks that every instance shares the Redis cache in the
// test's namespace with the same image, toolchains, architecture and
// limits: the conditions for sharing layers.
func (cl *cluster) checkInfo(t *testing.T) {
	t.Helper()
	var first *client.Info
	for _, in := range cl.instances {
		info, err := in.c.Info(ctx(t, 10*time.Second))
		if err != nil {
			t.Fatalf("%s: GET /info: %v", in.name, err)
		}
		if !info.Cache.Enabled || info.Cache.Backend != "redis" || info.Cache.Namespace != cl.ns {
			t.Fatalf("%s: cache %+v, want enabled, backend redis, namespace %s", in.name, info.Cache, cl.ns)
		}
		if first == nil {
			first = info
			continue
		}
		if info.ImageID != first.ImageID || info.Arch != first.Arch ||
			!slices.Equal(info.Toolchains, first.Toolchains) || !reflect.DeepEqual(info.Limits, first.Limits) {
			t.Fatalf("%s differs from %s in image, toolchains, arch or limits:\n%+v\n%+v", in.name, cl.instances[0].name, info, first)
		}
	}
}

// live returns the instances that have not exited.
func (cl *cluster) live() []*instance {
	var ins []*instance
	for _, in := range cl.instances {
		if !in.exited() {
			ins = append(ins, in)
		}
	}
	return ins
}

// answeredBy returns the instance that answered attempt a.
func (cl *cluster) answeredBy(t *testing.T, a attempt) *instance {
	t.Helper()
	for _, in := range cl.instances {
		if in.addr == a.Upstream {
			return in
		}
	}
	t.Fatalf("attempt %v: answered by no instance of the test", a)
	return nil
}

// execute sends req through nginx, alone, and returns the response and
// the attempts of the call.
func (cl *cluster) execute(t *testing.T, req *svc.Request) (*svc.Response, []attempt) {
	t.Helper()
	m := cl.rec.mark()
	resp, err := cl.c.Execute(ctx(t, 90*time.Second), req)
	as := cl.rec.since(m)
	if err != nil {
		t.Fatalf("execute through nginx: %v\nattempts:\n%s", err, dump(as))
	}
	if last := as[len(as)-1]; last.Path != "/execute" || last.Status != 200 {
		t.Fatalf("execute succeeded, but its last attempt was not a 200 of /execute:\n%s", dump(as))
	}
	return resp, as
}

// counters returns the metrics of every live instance.
func (cl *cluster) counters(t *testing.T) map[*instance]map[string]float64 {
	t.Helper()
	m := make(map[*instance]map[string]float64)
	for _, in := range cl.live() {
		m[in] = in.metrics(t)
	}
	return m
}

// delta is how much metric name of in grew from before to after.
func delta(before, after map[*instance]map[string]float64, in *instance, name string) float64 {
	return after[in][name] - before[in][name]
}

// helloRequest is the two-step compile-and-run request, cacheable, with a
// program printing a line with tag; it returns the line too.
func helloRequest(tag string) (*svc.Request, string) {
	want := "hello from " + tag + "\n"
	src := fmt.Sprintf("#include <stdio.h>\nint main(void) { fputs(%q, stdout); return 0; }\n", want)
	return &svc.Request{Cache: true, StopOnFailure: true, Steps: []svc.Step{
		svc.Single(svc.Task{Cmd: "gcc", Args: []string{"-O2", "-o", "hello", "hello.c"},
			Files: map[string]svc.File{"hello.c": {Content: src}}}),
		svc.Single(svc.Task{Cmd: "./hello", SandboxProfile: svc.ProfileNativeV2}),
	}}, want
}

// checkOutput checks that every task of resp exited with status 0 and
// that the last one printed want.
func checkOutput(t *testing.T, resp *svc.Response, want string) {
	t.Helper()
	for i, sr := range resp.Results {
		for j, r := range sr.Results {
			if r.Outcome != svc.OutcomeExited || r.ExitCode != 0 {
				t.Fatalf("step %d task %d: %s, exit code %d, stderr %q", i, j, r.Outcome, r.ExitCode, r.Stderr)
			}
		}
	}
	last := resp.Results[len(resp.Results)-1].Results
	if got := last[len(last)-1].Stdout; got != want {
		t.Fatalf("stdout %q, want %q", got, want)
	}
}

// checkCache checks the cache summary of resp.
func checkCache(t *testing.T, resp *svc.Response, replayed, stored int, by *instance) {
	t.Helper()
	if c := resp.Cache; !c.Enabled || c.ReplayedSteps != replayed || c.StoredSteps != stored {
		t.Fatalf("answered by %s: cache %+v, want %d steps replayed and %d stored", by.name, c, replayed, stored)
	}
}

// resultsJSON returns the "results" of an execute response body as sent.
func resultsJSON(t *testing.T, body []byte) []byte {
	t.Helper()
	var v struct {
		Results json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.Results == nil {
		t.Fatalf("execute response %q: %v", body, err)
	}
	return v.Results
}

// testReplayAcrossInstances: a two-step compile-and-run request that one
// instance ran and stored is replayed by another, with the same results
// to the byte but for the replay flags (statistics are those of the
// original run).
func testReplayAcrossInstances(t *testing.T, cl *cluster) {
	req, want := helloRequest("replay-" + randomHex(4))
	before := cl.counters(t)

	first, as := cl.execute(t, req)
	x := cl.answeredBy(t, as[len(as)-1])
	checkOutput(t, first, want)
	checkCache(t, first, 0, 2, x)
	firstJSON := resultsJSON(t, as[len(as)-1].Body)

	var second *svc.Response
	var y *instance
	var secondJSON []byte
	for range 2 * len(cl.instances) {
		resp, as := cl.execute(t, req)
		in := cl.answeredBy(t, as[len(as)-1])
		checkOutput(t, resp, want)
		checkCache(t, resp, 2, 0, in)
		if in != x {
			second, y, secondJSON = resp, in, resultsJSON(t, as[len(as)-1].Body)
			break
		}
	}
	if y == nil {
		t.Fatalf("nginx sent the request to %s every time", x.name)
	}
	t.Logf("stored by %s, replayed by %s", x.name, y.name)

	// The instances' own counters agree: x stored both steps, y looked
	// them up and found them.
	after := cl.counters(t)
	if d := delta(before, after, x, "svc_cache_stores_total"); d != 2 {
		t.Errorf("%s stored %v layers, want 2", x.name, d)
	}
	if d := delta(before, after, y, "svc_cache_hits_total"); d != 2 {
		t.Errorf("%s had %v cache hits, want 2", y.name, d)
	}
	if d := delta(before, after, y, "svc_cache_stores_total") + delta(before, after, y, "svc_cache_misses_total"); d != 0 {
		t.Errorf("%s missed or stored %v times, want 0", y.name, d)
	}

	// The same bytes but the replay flags.
	if n := bytes.Count(secondJSON, []byte(`"replayed":true`)); n != 2 {
		t.Errorf("replayed results carry %d replay flags, want 2: %s", n, secondJSON)
	}
	if got := bytes.ReplaceAll(secondJSON, []byte(`"replayed":true`), []byte(`"replayed":false`)); !bytes.Equal(got, firstJSON) {
		t.Errorf("results differ\nstored by %s:   %s\nreplayed by %s: %s", x.name, firstJSON, y.name, secondJSON)
	}
	for i := range second.Results {
		for j := range second.Results[i].Results {
			r := second.Results[i].Results[j]
			if !r.Replayed {
				t.Errorf("step %d task %d: not flagged replayed", i, j)
			}
			r.Replayed = false
			if o := first.Results[i].Results[j]; !reflect.DeepEqual(r, o) {
				t.Errorf("step %d task %d:\nreplayed %+v\noriginal %+v", i, j, r, o)
			}
		}
	}
}

// catRequest runs cat on a stored file; not cacheable.
func catRequest(fileID string) *svc.Request {
	return &svc.Request{Steps: []svc.Step{
		svc.Single(svc.Task{Cmd: "cat", Args: []string{"input.txt"},
			Files: map[string]svc.File{"input.txt": {FileID: fileID}}}),
	}}
}

// hasFile reports whether GET /file of in lists id.
func hasFile(t *testing.T, in *instance, id string) bool {
	t.Helper()
	files, err := in.c.List(ctx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("%s: GET /file: %v", in.name, err)
	}
	return slices.ContainsFunc(files, func(f svc.StoredFile) bool { return f.ID == id })
}

// upload uploads data through nginx with UploadBytes, so the client can
// upload it again, and returns its id and the instance that stored it.
func (cl *cluster) upload(t *testing.T, name string, data []byte) (string, *instance) {
	t.Helper()
	m := cl.rec.mark()
	up, err := cl.c.UploadBytes(ctx(t, 30*time.Second), name, data)
	as := cl.rec.since(m)
	if err != nil {
		t.Fatalf("upload through nginx: %v\n%s", err, dump(as))
	}
	holder := cl.answeredBy(t, as[len(as)-1])
	for _, in := range cl.live() {
		if has := hasFile(t, in, up.FileID); has != (in == holder) {
			t.Fatalf("after an upload answered by %s, %s lists the file: %v", holder.name, in.name, has)
		}
	}
	return up.FileID, holder
}

// recovery checks the attempts of an Execute call through nginx. Either
// one attempt, answered by an instance with the file, or a recovery:
// file_not_found from an instance without the file, the upload again
// and the request again, both with one X-Svc-Affinity, so both answered
// by one instance, which then lists the file. It returns the instance
// that ran the request and whether the call recovered.
func (cl *cluster) recovery(t *testing.T, as []attempt, id string) (*instance, bool) {
	t.Helper()
	if len(as) == 1 {
		return cl.answeredBy(t, as[0]), false
	}
	if len(as) != 3 || as[0].Path != "/execute" || as[0].Code != "file_not_found" || as[0].Affinity != "" ||
		as[1].Method != "POST" || as[1].Path != "/file" || (as[1].Status != 201 && as[1].Status != 200) ||
		as[2].Path != "/execute" || as[2].Status != 200 ||
		as[1].Affinity == "" || as[2].Affinity != as[1].Affinity {
		t.Fatalf("want one attempt, or file_not_found then the upload again and the request again with one X-Svc-Affinity; got:\n%s", dump(as))
	}
	missing, u := cl.answeredBy(t, as[0]), cl.answeredBy(t, as[1])
	if hasFile(t, missing, id) != (missing == u) {
		t.Errorf("%s answered file_not_found, and lists the file after the upload again to %s: %v", missing.name, u.name, !(missing == u))
	}
	if got := cl.answeredBy(t, as[2]); got != u {
		t.Fatalf("the upload again went to %s, the request again to %s:\n%s", u.name, got.name, dump(as))
	}
	if !hasFile(t, u, id) {
		t.Errorf("%s does not list the file uploaded again to it", u.name)
	}
	return u, true
}

// testFileOnAnotherInstance: a file is stored on the instance its upload
// reached. A request using it that nginx sends to another instance
// answers file_not_found; the client uploads the file again and sends the
// request again, which succeeds: nginx sends both to one instance (they
// carry one X-Svc-Affinity), which then has the file. Sent until such a
// recovery ran on an instance other than the first holder: the file is
// then on two instances, and requests landing on either need no upload.
func testFileOnAnotherInstance(t *testing.T, cl *cluster) {
	// Larger than nginx keeps in memory (client_body_buffer_size): the
	// upload goes through its temporary files.
	data := []byte(strings.Repeat("scale-out input "+randomHex(8)+"\n", 4096))
	id, holder := cl.upload(t, "input.txt", data)
	req := catRequest(id)

	has := map[*instance]bool{holder: true}
	recoveries := 0
	var other *instance
	for n := 0; other == nil; n++ {
		if n == 30 {
			t.Fatalf("no recovery ran elsewhere than on %s in %d requests (%d recoveries)", holder.name, n, recoveries)
		}
		resp, as := cl.execute(t, req)
		checkOutput(t, resp, string(data))
		in, recovered := cl.recovery(t, as, id)
		switch {
		case !recovered && !has[in]:
			t.Fatalf("%s ran the request without having the file:\n%s", in.name, dump(as))
		case recovered && has[cl.answeredBy(t, as[0])]:
			t.Fatalf("%s answered file_not_found but has the file:\n%s", cl.answeredBy(t, as[0]).name, dump(as))
		case recovered:
			// 201 when the upload again stored the file, 200 when the
			// instance had it already.
			if want := map[bool]int{false: 201, true: 200}[has[in]]; as[1].Status != want {
				t.Errorf("upload again to %s answered %d, want %d:\n%s", in.name, as[1].Status, want, dump(as))
			}
			recoveries++
			has[in] = true
			if in != holder {
				other = in
			}
		}
	}
	for _, in := range cl.instances {
		if got := hasFile(t, in, id); got != has[in] {
			t.Errorf("%s lists the file: %v, want %v", in.name, got, has[in])
		}
	}
	t.Logf("uploaded to %s; %d recoveries by the client, one uploaded it again to %s, where the request then ran", holder.name, recoveries, other.name)
}

// echoRequest is a one-step cacheable request printing tag.
func echoRequest(tag string) *svc.Request {
	return &svc.Request{Cache: true, Steps: []svc.Step{svc.Single(svc.Task{Cmd: "echo", Args: []string{tag}})}}
}

// testDropCacheForAll: DELETE /cache through nginx, which one instance
// serves, drops the namespace's layers for every instance: Redis holds no
// key of the namespace, and a request each instance had replayed before
// is executed again on each.
func testDropCacheForAll(t *testing.T, cl *cluster) {
	prefix := "svc:cache:" + cl.ns + ":"
	reqs := make([]*svc.Request, len(cl.instances))
	for i, in := range cl.instances {
		tag := fmt.Sprintf("drop-%d-%s", i, randomHex(4))
		reqs[i] = echoRequest(tag)
		for k, want := range [][2]int{{0, 1}, {1, 0}} { // executed and stored, then replayed
			resp, err := in.c.Execute(ctx(t, 60*time.Second), reqs[i])
			if err != nil {
				t.Fatalf("%s: %v", in.name, err)
			}
			checkOutput(t, resp, tag+"\n")
			if resp.Cache.ReplayedSteps != want[0] || resp.Cache.StoredSteps != want[1] {
				t.Fatalf("%s, request %d: cache %+v, want replayed %d, stored %d", in.name, k, resp.Cache, want[0], want[1])
			}
		}
	}
	keys := cl.redis.keys(t, prefix+"*")
	if len(keys) < len(cl.instances) {
		t.Fatalf("Redis holds %d keys of the namespace, want at least %d", len(keys), len(cl.instances))
	}

	m := cl.rec.mark()
	dropped, err := cl.c.DropCache(ctx(t, 30*time.Second))
	as := cl.rec.since(m)
	if err != nil {
		t.Fatalf("DELETE /cache through nginx: %v\n%s", err, dump(as))
	}
	d := cl.answeredBy(t, as[len(as)-1])
	if dropped != len(keys) {
		t.Errorf("%s dropped %d layers, Redis held %d", d.name, dropped, len(keys))
	}
	if left := cl.redis.keys(t, prefix+"*"); len(left) != 0 {
		t.Fatalf("after DELETE /cache, Redis still holds %d keys of the namespace: %q", len(left), left)
	}
	for i, in := range cl.instances {
		resp, err := in.c.Execute(ctx(t, 60*time.Second), reqs[i])
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		if resp.Cache.ReplayedSteps != 0 || resp.Cache.StoredSteps != 1 {
			t.Errorf("%s after DELETE /cache served by %s: cache %+v, want executed and stored again", in.name, d.name, resp.Cache)
		}
	}
	t.Logf("DELETE /cache served by %s dropped %d layers", d.name, dropped)
}

// sleepRequest is a request that takes a while; not cacheable.
func sleepRequest(tag string) *svc.Request {
	return &svc.Request{Steps: []svc.Step{svc.Single(svc.Task{Cmd: "sh",
		Args: []string{"-c", `sleep 1.5 && echo "$0"`, tag}})}}
}

// testSIGTERMUnderLoad: concurrent clients keep requests running on every
// instance; one instance gets SIGTERM. It exits within its shutdown
// timeout, the requests it was running answer shutting_down, the client
// sends them again and another instance runs them: every call succeeds.
// A file that lived only on the stopped instance is uploaded again by
// the client and the request using it succeeds on another instance.
func testSIGTERMUnderLoad(t *testing.T, cl *cluster) {
	// The instance to stop is the one holding this file.
	data := []byte("lost with its instance " + randomHex(8) + "\n")
	id, victim := cl.upload(t, "lost.txt", data)

	const workers = 6
	start := cl.rec.mark()
	var (
		mu       sync.Mutex // guards failures, calls
		failures []string
		calls    int
	)
	var exitedAt atomic.Pointer[time.Time]
	var wg sync.WaitGroup
	var abort atomic.Bool // the test gave up: stop at once
	defer func() {
		abort.Store(true)
		wg.Wait()
	}()
	for w := range workers {
		wg.Go(func() {
			after := 0 // calls begun once the victim had exited
			for n := 0; after < 2 && !abort.Load(); n++ {
				tag := fmt.Sprintf("w%d-%d", w, n)
				begun := time.Now()
				c, cancel := context.WithTimeout(context.Background(), 90*time.Second)
				resp, err := cl.c.Execute(c, sleepRequest(tag))
				cancel()
				mu.Lock()
				calls++
				switch {
				case err != nil:
					failures = append(failures, fmt.Sprintf("%s: %v", tag, err))
				case resp.Results[0].Results[0].Stdout != tag+"\n" || resp.Results[0].Results[0].ExitCode != 0:
					failures = append(failures, fmt.Sprintf("%s: %+v", tag, resp.Results[0].Results[0]))
				}
				stop := len(failures) > 0
				mu.Unlock()
				if stop {
					return
				}
				if e := exitedAt.Load(); e != nil && begun.After(*e) {
					after++
				}
			}
		})
	}

	// Stop the victim while it runs requests.
	err := waitFor(60*time.Second, victim.proc, func() error {
		if n := victim.metrics(t)["svc_execution_slots_in_use"]; n < 1 {
			return fmt.Errorf("%s runs no request", victim.name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	victim.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-victim.done:
	case <-time.After(instanceGrace):
		t.Fatalf("%s did not exit within %v of SIGTERM", victim.name, instanceGrace)
	}
	now := time.Now()
	exitedAt.Store(&now)
	took := now.Sub(signalled)
	if victim.err != nil {
		t.Errorf("%s exited with %v after SIGTERM:\n%s", victim.name, victim.err, victim.out)
	}
	if took > shutdownTimeout+2*time.Second {
		t.Errorf("%s took %v to exit after SIGTERM; SHUTDOWN_TIMEOUT_MS is %v", victim.name, took, shutdownTimeout)
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d calls failed:\n%s", len(failures), calls, strings.Join(failures, "\n"))
	}

	// The requests the victim was running answered shutting_down, and the
	// client's retry of each was answered by another instance.
	as := cl.rec.since(start)
	final := make(map[string]attempt) // by request id: the last attempt
	for _, a := range as {
		final[a.RequestID] = a
	}
	shut := 0
	statuses := make(map[string]int)
	for _, a := range as {
		statuses[fmt.Sprintf("%d %s", a.Status, a.Code)]++
		if a.Status != 503 || a.Code != "shutting_down" {
			continue
		}
		if a.Upstream != victim.addr {
			t.Errorf("shutting_down from %s, not the stopped instance: %v", a.Upstream, a)
		}
		shut++
		if f := final[a.RequestID]; f.Status != 200 || f.Upstream == victim.addr {
			t.Errorf("request %s: answered shutting_down, then finally %v", a.RequestID, f)
		}
	}
	if shut == 0 {
		t.Errorf("no request answered shutting_down:\n%s", dump(as))
	}
	t.Logf("%s exited %v after SIGTERM; %d calls by %d clients all succeeded; %d attempts answered shutting_down and were sent again; answers: %v",
		victim.name, took.Round(time.Millisecond), calls, workers, shut, statuses)

	// The file went with the victim: the client uploads it again, and
	// another instance runs the request.
	resp, fas := cl.execute(t, catRequest(id))
	checkOutput(t, resp, string(data))
	u, recovered := cl.recovery(t, fas, id)
	if !recovered || u == victim || fas[1].Status != 201 {
		t.Fatalf("want a recovery storing the file on another instance than %s:\n%s", victim.name, dump(fas))
	}
	t.Logf("the file uploaded to %s was uploaded again to %s, where the request ran", victim.name, u.name)
}

// testRedisStopped: with Redis gone, requests that were cache hits are
// executed (misses) and all succeed, promptly.
func testRedisStopped(t *testing.T, cl *cluster) {
	live := cl.live()
	req, want := helloRequest("redis-" + randomHex(4))
	resp, as := cl.execute(t, req)
	checkOutput(t, resp, want)
	checkCache(t, resp, 0, 2, cl.answeredBy(t, as[len(as)-1]))
	for _, in := range live {
		resp, err := in.c.Execute(ctx(t, 60*time.Second), req)
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		checkCache(t, resp, 2, 0, in)
	}

	before := cl.counters(t)
	if !cl.redis.stop(syscall.SIGTERM, 10*time.Second) {
		t.Fatal("redis-server did not exit within 10 s of SIGTERM")
	}
	answered := make(map[string]int) // by instance name
	for range 2 * len(live) {
		begun := time.Now()
		resp, as := cl.execute(t, req)
		took := time.Since(begun)
		in := cl.answeredBy(t, as[len(as)-1])
		answered[in.name]++
		checkOutput(t, resp, want)
		checkCache(t, resp, 0, 0, in)
		if took > 15*time.Second {
			t.Errorf("%s took %v without Redis", in.name, took)
		}
	}
	after := cl.counters(t)
	for _, in := range live {
		if answered[in.name] == 0 {
			t.Errorf("no request reached %s", in.name)
			continue
		}
		if d := delta(before, after, in, "svc_cache_hits_total"); d != 0 {
			t.Errorf("%s: %v cache hits without Redis", in.name, d)
		}
		if d := delta(before, after, in, "svc_cache_errors_total"); d < 1 {
			t.Errorf("%s counted no cache error without Redis", in.name)
		}
	}
	t.Logf("without Redis: %d requests executed, by instance %v", 2*len(live), answered)
}
