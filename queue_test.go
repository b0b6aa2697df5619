package svc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/httpapi"
	"github.com/svc-sandbox/svc/svctest"
)

// Waiting for a slot (API.md, QUEUE_TIMEOUT_MS) on real sandboxes, through
// a real server on loopback. The order of the queue is observed with
// svc.ObserveQueue, under the queue's own lock, so it is exact.

// queueEvents records the queue's events by request name: the first
// argument of the request's last task.
type queueEvents struct {
	mu     sync.Mutex
	events map[string][]string // "arrive", "admit", "leave" -> names in order
	most   int                 // the most requests that waited at once
}

func observeQueue(sb *svc.Sandbox) *queueEvents {
	q := &queueEvents{events: map[string][]string{}}
	svc.ObserveQueue(sb, func(req *svc.Request, event string) {
		last := req.Steps[len(req.Steps)-1].Tasks[0]
		name := last.Cmd
		if len(last.Args) > 0 {
			name = last.Args[0]
		}
		q.mu.Lock()
		defer q.mu.Unlock()
		q.events[event] = append(q.events[event], name)
		q.most = max(q.most, len(q.events["arrive"])-len(q.events["admit"])-len(q.events["leave"]))
	})
	return q
}

func (q *queueEvents) of(event string) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.events[event])
}

// post sends an /execute body under ctx and returns the status and body;
// err is the client's error when the exchange failed.
func post(s *svctest.Server, ctx context.Context, body string) (int, []byte, error) {
	resp, err := s.Client.Do(s.Request("POST", "/execute", strings.NewReader(body)).WithContext(ctx))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// errorCode is the code of an error body, or "".
func errorCode(b []byte) svc.Code {
	var e struct{ Code svc.Code }
	json.Unmarshal(b, &e)
	return e.Code
}

// metricValue reads one sample of GET /metrics; -1 when it is missing.
func metricValue(t testing.TB, s *svctest.Server, name string) float64 {
	t.Helper()
	resp := s.Do("GET", "/metrics", "")
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %q", name, line)
			}
			return f
		}
	}
	return -1
}

// sleepBody is a request whose task sleeps, holding its slot.
const sleepBody = `{"steps": [{"cmd": "sleep", "args": ["30"]}]}`

// burstProgram prints its argument: the run step of every request of
// TestQueueBurst.
const burstProgram = "#include <stdio.h>\nint main(int argc, char **argv) { printf(\"request %s\\n\", argv[1]); return 0; }\n"

// TestQueueBurst: 200 compile-and-run requests at once against 8 slots
// with a queue timeout of 60 s all succeed, and they are admitted in the
// order they arrived. The compile step is the same in all of them and
// cacheable: it runs in the first few and is replayed in the others (a
// compile each would take minutes of the CI's two CPUs); the run step
// differs and runs every time.
func TestQueueBurst(t *testing.T) {
	const n, slots = 200, 8
	cache := newCache(t, svc.CacheConfig{})
	s := svctest.NewServer(t, svctest.Config{
		Sandbox: svc.Config{Cache: cache, QueueTimeout: time.Minute, Limits: svc.Limits{MaxConcurrency: slots}},
		API:     httpapi.Config{Cache: cache},
	})
	events := observeQueue(s.Sandbox)
	src, _ := json.Marshal(burstProgram)
	type answer struct {
		status int
		body   []byte
		err    error
	}
	answers := make([]answer, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf(`{"steps": [
				{"cmd": "gcc", "args": ["-o", "prog", "prog.c"], "files": {"prog.c": %s}, "cache": true},
				{"cmd": "./prog", "args": ["%d"], "sandbox_profile": "native_v2"}]}`, src, i)
			<-start
			a := &answers[i]
			a.status, a.body, a.err = post(s, context.Background(), body)
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(began)

	replayed := 0
	for i, a := range answers {
		if a.err != nil || a.status != http.StatusOK {
			t.Errorf("request %d: %d %v: %s", i, a.status, a.err, a.body)
			continue
		}
		var resp struct {
			Results []json.RawMessage
			Cache   struct {
				ReplayedSteps int `json:"replayed_steps"`
			}
		}
		var run svc.Result
		if err := json.Unmarshal(a.body, &resp); err != nil || len(resp.Results) != 2 || json.Unmarshal(resp.Results[1], &run) != nil {
			t.Errorf("request %d: %s", i, a.body)
			continue
		}
		if run.Outcome != svc.OutcomeExited || run.ExitCode != 0 || run.Stdout != fmt.Sprintf("request %d\n", i) {
			t.Errorf("request %d: run %+v", i, run)
		}
		replayed += resp.Cache.ReplayedSteps
	}
	arrived, admitted := events.of("arrive"), events.of("admit")
	if len(arrived) != n || !slices.Equal(admitted, arrived) {
		t.Errorf("%d arrived, %d admitted; admitted in arrival order: %v", len(arrived), len(admitted), slices.Equal(admitted, arrived))
	}
	if left := events.of("leave"); len(left) != 0 {
		t.Errorf("%d requests left the queue without their slots: %v", len(left), left)
	}
	if events.most <= slots {
		t.Errorf("at most %d requests waited at once: the burst did not queue", events.most)
	}
	if c := metricValue(t, s, "svc_execution_queue_wait_seconds_count"); c != n {
		t.Errorf("svc_execution_queue_wait_seconds_count %v, want %d", c, n)
	}
	if q := metricValue(t, s, "svc_execution_queue_length"); q != 0 {
		t.Errorf("svc_execution_queue_length %v after the burst", q)
	}
	t.Logf("%d requests in %v; up to %d waited at once; %d compile steps replayed; queue wait sum %.1f s",
		n, elapsed.Round(time.Millisecond), events.most, replayed, metricValue(t, s, "svc_execution_queue_wait_seconds_sum"))
}

// TestQueueOffRefusesAtOnce: with QUEUE_TIMEOUT_MS 0, of 20 requests sent
// at once to 8 slots, 8 run and 12 are refused at once with 503
// capacity_exhausted and Retry-After, as the spec has it; nothing waits.
func TestQueueOffRefusesAtOnce(t *testing.T) {
	const n, slots = 20, 8
	s := svctest.NewServer(t, svctest.Config{Sandbox: svc.Config{Limits: svc.Limits{MaxConcurrency: slots, WallTimeout: time.Minute}}})
	events := observeQueue(s.Sandbox)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type refusal struct {
		status     int
		code       svc.Code
		retryAfter string
		took       time.Duration
	}
	refused := make(chan refusal, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			<-start
			began := time.Now()
			resp, err := s.Client.Do(s.Request("POST", "/execute", strings.NewReader(sleepBody)).WithContext(ctx))
			if err != nil {
				return // a sleeper, cancelled at the end
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			refused <- refusal{resp.StatusCode, errorCode(b), resp.Header.Get("Retry-After"), time.Since(began)}
		})
	}
	close(start)
	for range n - slots {
		select {
		case r := <-refused:
			if r.status != http.StatusServiceUnavailable || r.code != svc.CodeCapacityExhausted || r.retryAfter == "" {
				t.Errorf("refusal %+v; want 503 capacity_exhausted with Retry-After", r)
			}
			if r.took > 5*time.Second {
				t.Errorf("refused after %v: it must not wait for a slot", r.took)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("fewer than %d refusals within 30 s", n-slots)
		}
	}
	pollUntil(t, 10*time.Second, "8 requests holding the 8 slots", func() bool { return s.Sandbox.SlotsInUse() == slots })
	if got := len(events.of("admit")); got != slots {
		t.Errorf("%d admitted, want %d", got, slots)
	}
	if q := metricValue(t, s, "svc_execution_queue_length"); q != 0 {
		t.Errorf("svc_execution_queue_length %v", q)
	}
	cancel()
	wg.Wait()
	if len(refused) != 0 {
		t.Errorf("a sleeper answered: %+v", <-refused)
	}
	pollUntil(t, 10*time.Second, "the slots free again", func() bool { return s.Sandbox.SlotsInUse() == 0 })
}

// TestQueueDisconnect: a client that goes away while its request waits
// takes it out of the queue at once (the queue length drops), and the
// request never runs, not even when the slot comes free.
func TestQueueDisconnect(t *testing.T) {
	s := svctest.NewServer(t, svctest.Config{Sandbox: svc.Config{QueueTimeout: time.Minute, Limits: svc.Limits{MaxConcurrency: 1, MaxParallelTasks: 1, WallTimeout: time.Minute}}})
	events := observeQueue(s.Sandbox)
	holdCtx, release := context.WithCancel(context.Background())
	defer release()
	held := make(chan struct{})
	go func() {
		defer close(held)
		post(s, holdCtx, sleepBody)
	}()
	pollUntil(t, 10*time.Second, "the sleeper holding the slot", func() bool { return s.Sandbox.SlotsInUse() == 1 })

	ctx, leave := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		_, b, err := post(s, ctx, `{"steps": [{"cmd": "echo", "args": ["gone"]}]}`)
		if err == nil {
			err = fmt.Errorf("answered: %s", b)
		}
		gone <- err
	}()
	pollUntil(t, 10*time.Second, "svc_execution_queue_length 1", func() bool { return metricValue(t, s, "svc_execution_queue_length") == 1 })
	leave()
	<-gone
	pollUntil(t, 10*time.Second, "svc_execution_queue_length 0", func() bool { return metricValue(t, s, "svc_execution_queue_length") == 0 })

	release()
	<-held
	pollUntil(t, 10*time.Second, "the slot free", func() bool { return s.Sandbox.SlotsInUse() == 0 })
	status, b, err := post(s, context.Background(), `{"steps": [{"cmd": "echo", "args": ["after"]}]}`)
	if err != nil || status != http.StatusOK {
		t.Fatalf("after: %d %v %s", status, err, b)
	}
	if got, want := events.of("admit"), []string{"30", "after"}; !slices.Equal(got, want) {
		t.Errorf("admitted %v, want %v: the request whose client left must never run", got, want)
	}
	if got := events.of("leave"); !slices.Equal(got, []string{"gone"}) {
		t.Errorf("left the queue: %v, want [gone]", got)
	}
}

// TestQueueShutdown: a shutdown (what svc serve does on SIGTERM) answers
// the waiting requests 503 shutting_down at once, long before their queue
// timeout, as well as the running one it kills.
func TestQueueShutdown(t *testing.T) {
	const queueTimeout = 5 * time.Minute
	s := svctest.NewServer(t, svctest.Config{Sandbox: svc.Config{QueueTimeout: queueTimeout, Limits: svc.Limits{MaxConcurrency: 1, MaxParallelTasks: 1, WallTimeout: time.Minute}}})
	type answer struct {
		status int
		code   svc.Code
		err    error
	}
	answers := make(chan answer, 4)
	send := func(body string) {
		go func() {
			status, b, err := post(s, context.Background(), body)
			answers <- answer{status, errorCode(b), err}
		}()
	}
	send(sleepBody)
	pollUntil(t, 10*time.Second, "the sleeper holding the slot", func() bool { return s.Sandbox.SlotsInUse() == 1 })
	for i := range 3 {
		send(fmt.Sprintf(`{"steps": [{"cmd": "echo", "args": ["%d"]}]}`, i))
	}
	pollUntil(t, 10*time.Second, "3 requests waiting", func() bool { return s.Sandbox.QueueLength() == 3 })

	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	for range 4 {
		a := <-answers
		if a.err != nil || a.status != http.StatusServiceUnavailable || a.code != svc.CodeShuttingDown {
			t.Errorf("answer %+v; want 503 shutting_down", a)
		}
	}
	if d := time.Since(began); d > 30*time.Second {
		t.Errorf("shutdown took %v", d)
	} else {
		t.Logf("shut down in %v with 3 requests waiting (queue timeout %v)", d.Round(time.Millisecond), queueTimeout)
	}
}

// TestQueueDeadlineStartsWhenAdmitted: the overall timeout of a request
// that waited starts when it holds its slots: its second step, started
// more than OVERALL_TIMEOUT_MS after it arrived but well within it after
// its admission, runs.
func TestQueueDeadlineStartsWhenAdmitted(t *testing.T) {
	const overall = 3 * time.Second
	sb := newSandbox(t, svc.Config{QueueTimeout: time.Minute, Limits: svc.Limits{MaxConcurrency: 1, MaxParallelTasks: 1, OverallTimeout: overall}})
	first := make(chan error, 1)
	go func() {
		_, err := sb.Run(context.Background(), &svc.Request{Steps: []svc.Step{svc.Single(svc.Task{Cmd: "sleep", Args: []string{"3"}})}})
		first <- err
	}()
	pollUntil(t, 10*time.Second, "the first request holding the slot", func() bool { return sb.SlotsInUse() == 1 })
	// The first request holds the slot for at least 3 s more, less the
	// poll's few milliseconds: this one waits more than 2 s, then its
	// second step starts a second after its first, past the overall
	// timeout counted from its arrival.
	arrived := time.Now()
	resp, err := sb.Run(context.Background(), &svc.Request{Steps: []svc.Step{
		svc.Single(svc.Task{Cmd: "sleep", Args: []string{"1"}}),
		svc.Single(svc.Task{Cmd: "true"}),
	}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	took := time.Since(arrived)
	if err := <-first; err != nil {
		t.Fatalf("first: %v", err)
	}
	if resp.QueueWait < 2*time.Second || took <= overall {
		t.Fatalf("waited %v, took %v: the test did not wait as planned", resp.QueueWait, took)
	}
	expect(t, resp.Results[0].Results[0], svc.OutcomeExited, 0)
	expect(t, resp.Results[1].Results[0], svc.OutcomeExited, 0)
	t.Logf("waited %v for the slot, answered %v after arriving (overall timeout %v)", resp.QueueWait.Round(time.Millisecond), took.Round(time.Millisecond), overall)
}
