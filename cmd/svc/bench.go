package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/httpapi"
	"github.com/svc-sandbox/svc/internal/pingpong"
	"github.com/svc-sandbox/svc/internal/runner"
)

const benchUsage = `usage: svc bench [flags]

Measures, in one process and as root, what a request costs next to a bare
fork and exec of /bin/true from Go measured in the same run (first and last),
and prints a table: each row's median and p99, its ratio to its baseline (the
"vs" column), the cost over that baseline, and the target of issue 10.

Figures (--only selects them by id; the bare baseline always runs):

  library     one-task /bin/true request through Sandbox.Run
  http        the same request over HTTP on loopback: the httpapi handler with
              an API key, a net/http client with keep-alive
  http-floor  the same HTTP path to a handler that only runs os/exec /bin/true
  throughput  requests/s over HTTP with 2 and 8 clients, and bare fork+exec
              with 2 and 8 goroutines
  remote      the same from another process (svc starts itself as a load
              client): 1 client's median latency, 2 and 8 clients' requests/s,
              each next to the load client's own fork+exec of /bin/true
  gcc         gcc -O2 hello.c then ./hello (native_v2) as one request, and the
              same two commands on the host, sampled in turn
  replay      the gcc step replayed from a dir:// step cache
  go          go build of hello world (a new main package each time), then its
              run (native_v2), as one request: from an empty build cache
              (limits raised to fit) and from the prepared Go build cache
              (default limits), and the same two commands on the host, from
              an empty cache and from one holding what hello world imports,
              sampled in turn
  width       a parallel step of 1, 4 and 8 /bin/true tasks, per task
  output      a task writing 1 KiB, 1 MiB and 16 MiB to stdout, and the same
              command on the host read by Go
  file        a /bin/true task with a 64 MiB stored file placed, and without
  judged      a judged submission: g++ -O2 of a C++ solution (a cached step,
              replayed) and 48 tests as 6 parallel steps of 8 under native_v2,
              as one request; next to the 48 tests on the host, 8 at a time
  judged-files
              judged from files: 48 stored tests of 1 MiB read as stdin_path,
              outputs to stdout_path, a token checker in the sandbox, builds
              replayed; next to bare fork+exec of the same on the host and to
              inline stdin; the bytes of a submission, the service's CPU a test
  stdin-file  the service's own CPU for a 256 MiB stdin_path read by wc
  interactive the round trip of a line between two tasks that feed each other
              (stdin_from: a pinger and cat, native_v2), 10000 round trips a
              sample timed by the pinger, and the same two programs joined by
              two plain pipes on the host, sampled in turn

`

// benchFlags are the settings of svc bench.
type benchFlags struct {
	runs      int            // samples of the cheap figures
	heavyRuns int            // samples of gcc, 16 MiB output, 64 MiB file, interactive
	warmup    int            // untimed runs before each figure's samples
	duration  time.Duration  // timed window of each throughput row
	only      *regexp.Regexp // figures to run; nil is all
	json      bool
	parent    string // where the state directory is made
	uidBase   int
	cpuProf   string // file for a Go CPU profile of the whole run; "" is none
	goCache   string // Config.GoBuildCache of the go figure; "" is one in the state dir
}

func benchCmd(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("svc bench", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Usage = func() { fmt.Fprint(stderr, benchUsage+fs.FlagUsages()) }
	var f benchFlags
	fs.IntVar(&f.runs, "runs", 200, "samples per figure")
	fs.IntVar(&f.heavyRuns, "heavy-runs", 0, "samples of the slow rows (gcc, 16 MiB output, 64 MiB file, interactive); 0 is runs/4, at least 3")
	fs.IntVar(&f.warmup, "warmup", 5, "untimed runs before each row's samples (per client for throughput)")
	fs.DurationVar(&f.duration, "duration", 3*time.Second, "timed window of each throughput row")
	only := fs.String("only", "", "regular expression: run only the figures whose id it matches")
	fs.BoolVar(&f.json, "json", false, "print JSON instead of the table")
	fs.StringVar(&f.parent, "state-dir", os.TempDir(), "directory in which a fresh state directory is made and removed at the end; must be searchable by others")
	fs.IntVar(&f.uidBase, "uid-base", 2_000_000_000, "first host uid/gid of the sandbox identities (each sandbox takes the range Sandbox.HostIDs reports, up to three sandboxes)")
	fs.StringVar(&f.cpuProf, "cpuprofile", "", "write a Go CPU profile of the whole run to this file (go tool pprof reads it)")
	fs.StringVar(&f.goCache, "go-build-cache", "", "directory of the prepared Go build cache of the go figure (GO_BUILD_CACHE_DIR), kept; default one in the state dir, prepared first (a minute of one CPU)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("bench: unexpected arguments %q", fs.Args())
	}
	if f.runs < 1 || f.warmup < 0 || f.heavyRuns < 0 || f.duration <= 0 {
		return errors.New("bench: --runs and --duration must be positive, --heavy-runs and --warmup not negative")
	}
	if f.heavyRuns == 0 {
		f.heavyRuns = max(3, f.runs/4)
	}
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			return fmt.Errorf("bench: --only: %w", err)
		}
		var ids []string
		for _, fig := range figures() {
			ids = append(ids, fig.id)
		}
		if !slices.ContainsFunc(ids, re.MatchString) {
			return fmt.Errorf("bench: --only %q matches no figure (%s)", re, strings.Join(ids, ", "))
		}
		f.only = re
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("bench: needs root: sandboxes use namespaces, cgroups and mounts (euid %d)", os.Geteuid())
	}
	if f.cpuProf != "" {
		pf, err := os.Create(f.cpuProf)
		if err != nil {
			return fmt.Errorf("bench: --cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			pf.Close()
			return fmt.Errorf("bench: --cpuprofile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			pf.Close()
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runBench(ctx, f, stdout)
}

// A figure is one figure of issue 10: an id for --only and what measures
// it, adding rows to the bench.
type figure struct {
	id  string
	run func(*bench) error
}

// figures returns the figures in the order they run, between the two
// halves of the bare baseline.
func figures() []figure {
	return []figure{
		{"library", (*bench).library},
		{"http", (*bench).http},
		{"http-floor", (*bench).httpFloor},
		{"throughput", (*bench).throughput},
		{"remote", (*bench).remote},
		{"gcc", (*bench).gcc},
		{"replay", (*bench).replay},
		{"go", (*bench).goBuild},
		{"width", (*bench).width},
		{"output", (*bench).output},
		{"file", (*bench).file},
		{"judged", (*bench).judged},
		{"judged-files", (*bench).judgedFiles},
		{"stdin-file", (*bench).stdinFile},
		{"interactive", (*bench).interactive},
	}
}

// A row is one line of the table.
type row struct {
	Figure  string        `json:"figure"`
	Name    string        `json:"name"`
	Samples int           `json:"samples"`
	Median  time.Duration `json:"median_ns"`
	P99     time.Duration `json:"p99_ns"`
	// CPU is the busy CPU time of the whole machine (every process and
	// kernel thread) per sample, over the samples: what a request costs
	// in all, which bounds the throughput.
	CPU time.Duration `json:"cpu_per_sample_ns,omitempty"`
	// PerSecond is the rate of a throughput row.
	PerSecond float64 `json:"requests_per_second,omitempty"`
	// Baseline names the row that Ratio, RatioP99 and Extra compare with.
	Baseline string `json:"baseline,omitempty"`
	// Ratio is Median over the baseline's (for a throughput row, PerSecond
	// over the baseline's); RatioP99 is P99 over the baseline's.
	Ratio    float64 `json:"ratio,omitempty"`
	RatioP99 float64 `json:"ratio_p99,omitempty"`
	// Extra is Median less the baseline's: the cost over it.
	Extra  time.Duration `json:"extra_ns,omitempty"`
	Target string        `json:"target,omitempty"`
	Pass   *bool         `json:"pass,omitempty"`
	// Error says why the figure has no numbers.
	Error string `json:"error,omitempty"`

	base    *row
	ok      func(*row) bool // the target's test
	samples []time.Duration
}

// A target is the goal of a row and its test.
type target struct {
	text string
	ok   func(*row) bool
}

func ratioAtMost(x float64) target {
	return target{fmt.Sprintf("<= %gx", x), func(r *row) bool { return r.Ratio <= x }}
}

func ratioAtLeast(x float64) target {
	return target{fmt.Sprintf(">= %gx", x), func(r *row) bool { return r.Ratio >= x }}
}

// machine describes where the figures were measured.
type machine struct {
	CPUs    int       `json:"cpus"`
	Kernel  string    `json:"kernel"`
	Cgroup  int       `json:"cgroup_version"`
	Go      string    `json:"go"`
	Slots   int       `json:"task_slots"`
	LoadAvg string    `json:"load_average"`
	Time    time.Time `json:"time"`
}

// bench holds what the figures share: the default sandbox with its file
// store, the HTTP server in front of it, and the rows so far.
type bench struct {
	ctx     context.Context
	f       benchFlags
	dir     string // the state directory of this run
	nextUID int    // UIDBase of the next sandbox

	sb     *svc.Sandbox // default limits, with files: most figures
	files  *svc.FileStore
	url    string // the HTTP server's base URL
	key    string
	client *http.Client

	rows []*row
	// cpu is the machine's busy CPU time per sample of the last measure.
	cpu time.Duration
	// bare is the baseline of the rows compared with bare: the samples
	// taken first and last together, summarized once both are in.
	bare *row
}

func runBench(ctx context.Context, f benchFlags, stdout io.Writer) (err error) {
	m := machine{CPUs: runtime.NumCPU(), Kernel: readTrim("/proc/sys/kernel/osrelease"), Go: runtime.Version(),
		LoadAvg: loadAvg(), Time: time.Now().UTC()}
	dir, err := os.MkdirTemp(f.parent, "svc-bench-")
	if err != nil {
		return fmt.Errorf("bench: state dir: %w", err)
	}
	defer func() {
		if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
			err = fmt.Errorf("bench: remove state dir: %w", rerr)
		}
	}()
	if err := os.Chmod(dir, 0o711); err != nil {
		return fmt.Errorf("bench: state dir: %w", err)
	}
	b := &bench{ctx: ctx, f: f, dir: dir, nextUID: f.uidBase, bare: &row{Figure: "bare", Name: "bare"}}
	stopServer, err := b.start()
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer func() {
		if serr := stopServer(); serr != nil && err == nil {
			err = fmt.Errorf("bench: %w", serr)
		}
	}()
	m.Cgroup, m.Slots = b.sb.CgroupVersion(), b.sb.Limits().MaxConcurrency

	first, err := b.bareRow("bare, first")
	if err != nil {
		return fmt.Errorf("bench: bare baseline: %w", err)
	}
	failed := 0
	for _, fig := range figures() {
		if f.only != nil && !f.only.MatchString(fig.id) {
			continue
		}
		if err := fig.run(b); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("bench: %s: %w", fig.id, ctx.Err())
			}
			failed++
			b.rows = append(b.rows, &row{Figure: fig.id, Name: fig.id, Error: err.Error()})
		}
	}
	last, err := b.bareRow("bare, last")
	if err != nil {
		return fmt.Errorf("bench: bare baseline: %w", err)
	}
	b.bare.Samples = first.Samples + last.Samples
	b.bare.Median, b.bare.P99 = summarize(append(slices.Clone(first.samples), last.samples...))
	b.bare.CPU = (first.CPU + last.CPU) / 2
	b.rows = slices.Insert(b.rows, 0, first, last, b.bare)
	for _, r := range b.rows {
		r.compare()
	}

	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		err = enc.Encode(struct {
			Machine machine `json:"machine"`
			Rows    []*row  `json:"rows"`
		}{m, b.rows})
	} else {
		err = printTable(stdout, m, b.rows)
		if err == nil {
			made, reused, kept, destroyed := runner.NetnsCounts()
			_, err = fmt.Fprintf(stdout, "network namespaces: %d made, %d handed out again; of those a task could use, %d read unchanged and kept, %d destroyed\n", made, reused, kept, destroyed)
		}
		if err == nil {
			shells, tasks := runner.ShellCounts()
			_, err = fmt.Fprintf(stdout, "sandbox shells: %d made, %d tasks run in them\n", shells, tasks)
		}
	}
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if failed > 0 {
		return fmt.Errorf("bench: figures failed: %d (see their rows)", failed)
	}
	return nil
}

// start opens the file store, the default sandbox and the HTTP server on
// loopback, and returns what stops them.
func (b *bench) start() (stop func() error, err error) {
	files, err := svc.OpenFileStore(svc.FileStoreConfig{Dir: filepath.Join(b.dir, "files")})
	if err != nil {
		return nil, fmt.Errorf("file store: %w", err)
	}
	b.files = files
	if b.sb, err = b.newSandbox("default", svc.Config{Files: files}); err != nil {
		files.Close()
		return nil, err
	}
	closeAll := func() error {
		return errors.Join(closeSandbox(b.sb), files.Close())
	}
	b.key = newKey()
	api, err := httpapi.New(httpapi.Config{Sandbox: b.sb, Keys: []string{b.key}})
	if err != nil {
		return nil, errors.Join(err, closeAll())
	}
	floor, err := floorHandler(b.key)
	if err != nil {
		return nil, errors.Join(err, closeAll())
	}
	mux := http.NewServeMux()
	mux.Handle("/", api)
	mux.Handle("POST /bench/floor", floor)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, errors.Join(err, closeAll())
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	b.url = "http://" + ln.Addr().String()
	// Keep-alive for every client of the 8-client row.
	tr := &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}
	b.client = &http.Client{Transport: tr}
	return func() error {
		tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return errors.Join(srv.Shutdown(ctx), closeAll())
	}, nil
}

// newSandbox makes a sandbox with a state directory and host ids of its own.
func (b *bench) newSandbox(name string, cfg svc.Config) (*svc.Sandbox, error) {
	cfg.StateDir = filepath.Join(b.dir, name)
	cfg.UIDBase = b.nextUID
	sb, err := svc.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", name, err)
	}
	first, n := sb.HostIDs()
	b.nextUID = first + n
	return sb, nil
}

func closeSandbox(sb *svc.Sandbox) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return sb.Close(ctx)
}

// floorHandler answers POST /bench/floor like /execute would for one
// /bin/true task, with nothing in between but the key check and os/exec.
func floorHandler(key string) (http.Handler, error) {
	answer, err := json.Marshal(svc.Response{Results: []svc.StepResult{{Results: []svc.Result{{Outcome: svc.OutcomeExited}}}}})
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, `{"error":"unauthorized","code":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		io.Copy(io.Discard, r.Body)
		if err := exec.Command("/bin/true").Run(); err != nil {
			http.Error(w, `{"error":"exec failed","code":"internal_error"}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}), nil
}

// measure runs op warm-up times untimed, then n times, timing each call of
// op alone; check looks at each result once the clock has stopped.
// timed runs op once and returns how long it took; check looks at the
// result after the clock stops.
func timed[T any](op func() (T, error), check func(T) error) (time.Duration, error) {
	start := time.Now()
	v, err := op()
	d := time.Since(start)
	if err == nil {
		err = check(v)
	}
	return d, err
}

func measure[T any](b *bench, n int, op func() (T, error), check func(T) error) ([]time.Duration, error) {
	for range b.f.warmup {
		v, err := op()
		if err == nil {
			err = check(v)
		}
		if err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	ds := make([]time.Duration, 0, n)
	busy := busyCPU()
	for range n {
		if err := b.ctx.Err(); err != nil {
			return nil, err
		}
		d, err := timed(op, check)
		if err != nil {
			return nil, err
		}
		ds = append(ds, d)
	}
	b.cpu = 0
	if n > 0 && busy >= 0 {
		b.cpu = (busyCPU() - busy) / time.Duration(n)
	}
	return ds, nil
}

// measurePair samples two operations in turn, n times each after the
// warm-up runs of both, so that the host's drift over the row weighs on
// both alike: a then b, then b then a, and so on, so that neither always
// follows the other (and the work a sandbox does after a request, the
// other). cpuA and cpuB are the machine's busy CPU per sample of each.
func measurePair[A, B any](bn *bench, n int, a func() (A, error), checkA func(A) error, b func() (B, error), checkB func(B) error) (dsA, dsB []time.Duration, cpuA, cpuB time.Duration, err error) {
	for range bn.f.warmup {
		if _, err := timed(a, checkA); err != nil {
			return nil, nil, 0, 0, fmt.Errorf("warm-up: %w", err)
		}
		if _, err := timed(b, checkB); err != nil {
			return nil, nil, 0, 0, fmt.Errorf("warm-up: %w", err)
		}
	}
	dsA, dsB = make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	var busyA, busyB time.Duration
	sampleA := func() error { return sample(a, checkA, &dsA, &busyA) }
	sampleB := func() error { return sample(b, checkB, &dsB, &busyB) }
	for i := range n {
		if err := bn.ctx.Err(); err != nil {
			return nil, nil, 0, 0, err
		}
		first, second := sampleA, sampleB
		if i%2 == 1 {
			first, second = sampleB, sampleA
		}
		if err := first(); err != nil {
			return nil, nil, 0, 0, err
		}
		if err := second(); err != nil {
			return nil, nil, 0, 0, err
		}
	}
	if n > 0 {
		cpuA, cpuB = busyA/time.Duration(n), busyB/time.Duration(n)
	}
	return dsA, dsB, cpuA, cpuB, nil
}

// sample times op once, appending its time to ds and the machine's busy
// CPU meanwhile to busy (nothing when /proc/stat cannot be read).
func sample[T any](op func() (T, error), check func(T) error, ds *[]time.Duration, busy *time.Duration) error {
	t := busyCPU()
	d, err := timed(op, check)
	if t >= 0 {
		*busy += busyCPU() - t
	}
	*ds = append(*ds, d)
	return err
}

// busyCPU returns the time all CPUs of the machine have spent busy since
// boot (user, nice, system, irq, softirq of /proc/stat), -1 when unknown.
func busyCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return -1
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return -1
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// add appends a row of samples compared with base and the target t.
func (b *bench) add(figure, name string, ds []time.Duration, base *row, t target) *row {
	r := &row{Figure: figure, Name: name, Samples: len(ds), CPU: b.cpu, base: base, Target: t.text, ok: t.ok, samples: ds}
	r.Median, r.P99 = summarize(slices.Clone(ds))
	b.rows = append(b.rows, r)
	return r
}

// compare fills the columns that compare r with its baseline and target.
func (r *row) compare() {
	if r.Error != "" {
		return
	}
	if base := r.base; base != nil {
		r.Baseline = base.Name
		if r.PerSecond > 0 {
			r.Ratio = r.PerSecond / base.PerSecond
		} else {
			r.Ratio = float64(r.Median) / float64(base.Median)
			r.RatioP99 = float64(r.P99) / float64(base.P99)
			r.Extra = r.Median - base.Median
		}
	}
	if r.ok != nil {
		pass := r.ok(r)
		r.Pass = &pass
	}
}

// summarize sorts ds and returns its median and its 99th percentile
// (nearest rank).
func summarize(ds []time.Duration) (median, p99 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	slices.Sort(ds)
	n := len(ds)
	median = ds[n/2]
	if n%2 == 0 {
		median = (ds[n/2-1] + ds[n/2]) / 2
	}
	return median, ds[int(math.Ceil(0.99*float64(n)))-1]
}

func execTrue() (struct{}, error) { return struct{}{}, exec.Command("/bin/true").Run() }

func noCheck[T any](T) error { return nil }

// bareRow samples the baseline, exec.Command("/bin/true").Run() in turn,
// into a row that is not in b.rows yet.
func (b *bench) bareRow(name string) (*row, error) {
	ds, err := measure(b, b.f.runs, execTrue, noCheck)
	if err != nil {
		return nil, err
	}
	r := &row{Figure: "bare", Name: name, Samples: len(ds), CPU: b.cpu, samples: ds}
	r.Median, r.P99 = summarize(slices.Clone(ds))
	return r, nil
}

// runOp runs req in sb.
func (b *bench) runOp(sb *svc.Sandbox, req *svc.Request) func() (*svc.Response, error) {
	return func() (*svc.Response, error) { return sb.Run(b.ctx, req) }
}

// exitedOK checks that every task of every step ran and exited with 0.
func exitedOK(steps int) func(*svc.Response) error {
	return func(resp *svc.Response) error {
		if len(resp.Results) != steps {
			return fmt.Errorf("%d step results, want %d", len(resp.Results), steps)
		}
		for i, s := range resp.Results {
			for j, r := range s.Results {
				if r.Outcome != svc.OutcomeExited || r.ExitCode != 0 {
					return fmt.Errorf("steps[%d][%d]: outcome %s, exit code %d, error %q, stderr %q",
						i, j, r.Outcome, r.ExitCode, r.Error, r.Stderr)
				}
			}
		}
		return nil
	}
}

func single(t svc.Task) *svc.Request { return &svc.Request{Steps: []svc.Step{svc.Single(t)}} }

func (b *bench) library() error {
	ds, err := measure(b, b.f.runs, b.runOp(b.sb, single(svc.Task{Cmd: "/bin/true"})), exitedOK(1))
	if err != nil {
		return err
	}
	b.add("library", "library /bin/true", ds, b.bare, ratioAtMost(1.8))
	return nil
}

// answer is an HTTP response read in full.
type answer struct {
	status int
	body   []byte
}

// trueBody is the /execute body of a one-task /bin/true request.
const trueBody = `{"steps":[{"cmd":"/bin/true"}]}`

// post sends trueBody to path with the API key and reads the answer.
func (b *bench) post(path string) func() (answer, error) {
	return func() (answer, error) {
		req, err := http.NewRequestWithContext(b.ctx, http.MethodPost, b.url+path, strings.NewReader(trueBody))
		if err != nil {
			return answer{}, err
		}
		req.Header.Set("Authorization", "Bearer "+b.key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := b.client.Do(req)
		if err != nil {
			return answer{}, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		return answer{resp.StatusCode, body}, err
	}
}

// answerOK checks an answer to trueBody.
func answerOK(a answer) error {
	if a.status != http.StatusOK {
		return fmt.Errorf("status %d: %s", a.status, a.body)
	}
	resp, err := svc.DecodeResponse(bytes.NewReader(a.body))
	if err != nil {
		return err
	}
	return exitedOK(1)(resp)
}

func (b *bench) http() error {
	ds, err := measure(b, b.f.runs, b.post("/execute"), answerOK)
	if err != nil {
		return err
	}
	b.add("http", "http /bin/true", ds, b.bare, target{"<= 2.5x, p99 <= 4x",
		func(r *row) bool { return r.Ratio <= 2.5 && r.RatioP99 <= 4 }})
	return nil
}

func (b *bench) httpFloor() error {
	ds, err := measure(b, b.f.runs, b.post("/bench/floor"), answerOK)
	if err != nil {
		return err
	}
	b.add("http-floor", "http floor: os/exec handler", ds, b.bare, target{})
	return nil
}

func (b *bench) throughput() error {
	for _, n := range []int{2, 8} {
		bare, err := rate(b, fmt.Sprintf("bare, %d goroutines", n), n, nil, target{}, execTrue, noCheck)
		if err != nil {
			return err
		}
		_, err = rate(b, fmt.Sprintf("http, %d clients", n), n, bare, ratioAtLeast(0.3), b.post("/execute"), answerOK)
		if err != nil {
			return err
		}
	}
	return nil
}

// rate runs op from n goroutines at once, warm-up times each untimed, then
// for b.f.duration, and adds a row with the rate and each call's latency,
// compared with base for the target t.
func rate[T any](b *bench, name string, n int, base *row, t target, op func() (T, error), check func(T) error) (*row, error) {
	var (
		mu  sync.Mutex // guards all
		all []time.Duration
	)
	loop := func(more func(i int) bool) error {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for w := range n {
			wg.Go(func() {
				var ds []time.Duration
				for i := 0; more(i) && b.ctx.Err() == nil; i++ {
					d, err := timed(op, check)
					if err != nil {
						errs[w] = err
						return
					}
					ds = append(ds, d)
				}
				mu.Lock()
				all = append(all, ds...)
				mu.Unlock()
			})
		}
		wg.Wait()
		return errors.Join(append(errs, b.ctx.Err())...)
	}
	if err := loop(func(i int) bool { return i < b.f.warmup }); err != nil {
		return nil, fmt.Errorf("%s: warm-up: %w", name, err)
	}
	all = nil
	start, busy := time.Now(), busyCPU()
	deadline := start.Add(b.f.duration)
	if err := loop(func(int) bool { return time.Now().Before(deadline) }); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	elapsed := time.Since(start)
	b.cpu = 0
	if len(all) > 0 && busy >= 0 {
		b.cpu = (busyCPU() - busy) / time.Duration(len(all))
	}
	r := b.add("throughput", name, all, base, t)
	r.PerSecond = float64(len(all)) / elapsed.Seconds()
	return r, nil
}

// helloC is the program of the gcc figures.
const helloC = "#include <stdio.h>\nint main(void) { puts(\"hello\"); return 0; }\n"

func (b *bench) gcc() error {
	dir, err := os.MkdirTemp(b.dir, "host-gcc-")
	if err != nil {
		return err
	}
	host := func() ([]byte, error) {
		if err := os.WriteFile(filepath.Join(dir, "hello.c"), []byte(helloC), 0o644); err != nil {
			return nil, err
		}
		gcc := exec.Command("gcc", "-O2", "-o", "hello", "hello.c")
		gcc.Dir = dir
		if out, err := gcc.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("gcc: %w: %s", err, out)
		}
		hello := exec.Command("./hello")
		hello.Dir = dir
		return hello.Output()
	}
	req := &svc.Request{StopOnFailure: true, Steps: []svc.Step{
		svc.Single(svc.Task{Cmd: "gcc", Args: []string{"-O2", "-o", "hello", "hello.c"},
			Files: map[string]svc.File{"hello.c": {Content: helloC}}}),
		svc.Single(svc.Task{Cmd: "./hello", SandboxProfile: svc.ProfileNativeV2}),
	}}
	// In turn: a compile takes tens of milliseconds, long enough for the
	// host's load to change between two blocks of samples.
	hostDs, ds, hostCPU, cpu, err := measurePair(b, b.f.heavyRuns, host, func(out []byte) error {
		if string(out) != "hello\n" {
			return fmt.Errorf("host ./hello wrote %q", out)
		}
		return nil
	}, b.runOp(b.sb, req), func(resp *svc.Response) error {
		if err := exitedOK(2)(resp); err != nil {
			return err
		}
		if out := resp.Results[1].Results[0].Stdout; out != "hello\n" {
			return fmt.Errorf("./hello wrote %q", out)
		}
		return nil
	})
	if err != nil {
		return err
	}
	b.cpu = hostCPU
	base := b.add("gcc", "gcc+run, host", hostDs, nil, target{})
	b.cpu = cpu
	b.add("gcc", "gcc+run, sandbox", ds, base, ratioAtMost(1.05))
	return nil
}

// goRoot is the Go toolchain the go figure measures, the sandboxes' own.
const goRoot = "/usr/local/go"

// helloGo is hello world in Go, printing n: each sample's is new, so that
// its compile is never a hit of the build cache.
func helloGo(n int) map[string]string {
	return map[string]string{
		"go.mod":  "module hello\n\ngo 1.26\n",
		"main.go": fmt.Sprintf("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\", %d) }\n", n),
	}
}

// goBuild measures go build of hello world then its run, cold and warm, in
// the sandbox and on the host. Cold, every sample's build cache is empty:
// on the host a new GOCACHE, in the sandbox a request without the
// prepared cache (go's cache in the new workspace), with limits raised to
// fit (the defaults end it with cpu_time_exceeded) and every CPU, as the
// host has. Warm, the standard library is compiled already: on the host
// the cache of the builds before, in the sandbox the prepared Go build
// cache, under the default limits. The cold rows take 3 samples at most.
func (b *bench) goBuild() error {
	if _, err := os.Stat(filepath.Join(goRoot, "bin/go")); err != nil {
		return fmt.Errorf("no Go toolchain: %w", err)
	}
	dir, err := os.MkdirTemp(b.dir, "host-go-")
	if err != nil {
		return err
	}
	n := 0
	host := func(cache func() (string, error)) func() ([]byte, error) {
		return func() ([]byte, error) {
			n++
			for name, content := range helloGo(n) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					return nil, err
				}
			}
			gocache, err := cache()
			if err != nil {
				return nil, err
			}
			env := []string{"PATH=" + goRoot + "/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + os.TempDir(), "LANG=C.UTF-8", "GOCACHE=" + gocache}
			build := exec.Command("go", "build", "-o", "hello", ".")
			build.Dir, build.Env = dir, env
			if out, err := build.CombinedOutput(); err != nil {
				return nil, fmt.Errorf("go build: %w: %s", err, out)
			}
			hello := exec.Command("./hello")
			hello.Dir = dir
			return hello.Output()
		}
	}
	hostCheck := func(out []byte) error {
		if want := fmt.Sprintf("hello %d\n", n); string(out) != want {
			return fmt.Errorf("host ./hello wrote %q, want %q", out, want)
		}
		return nil
	}
	coldCache := filepath.Join(dir, "cold")
	hostCold := host(func() (string, error) { return coldCache, nil })
	// The cold cache goes after the clock stops.
	hostColdCheck := func(out []byte) error { return errors.Join(hostCheck(out), os.RemoveAll(coldCache)) }
	warmCache := filepath.Join(dir, "warm")
	hostWarm := host(func() (string, error) { return warmCache, nil })
	// What hello world imports, compiled once, whatever --warmup says.
	if _, err := timed(hostWarm, hostCheck); err != nil {
		return err
	}

	sandboxReq := func() *svc.Request {
		n++
		files := make(map[string]svc.File)
		for name, content := range helloGo(n) {
			files["hello/"+name] = svc.File{Content: content}
		}
		return &svc.Request{StopOnFailure: true, Steps: []svc.Step{
			svc.Single(svc.Task{Cmd: "go", Args: []string{"build", "-o", "hello", "."}, WorkingDir: "/svc/hello", Files: files}),
			svc.Single(svc.Task{Cmd: "./hello/hello", SandboxProfile: svc.ProfileNativeV2}),
		}}
	}
	sandbox := func(sb *svc.Sandbox) func() (*svc.Response, error) {
		return func() (*svc.Response, error) { return sb.Run(b.ctx, sandboxReq()) }
	}
	sandboxCheck := func(resp *svc.Response) error {
		if err := exitedOK(2)(resp); err != nil {
			return err
		}
		if out, want := resp.Results[1].Results[0].Stdout, fmt.Sprintf("hello %d\n", n); out != want {
			return fmt.Errorf("./hello wrote %q, want %q", out, want)
		}
		return nil
	}

	cpus := int64(runtime.NumCPU())
	cold, err := b.newSandbox("go-cold", svc.Config{Limits: svc.Limits{
		MemoryMax: svc.GiB, PidsMax: 256, CPUMax: svc.CPUMax{Quota: cpus * 100000, Period: 100000},
		CPUTimeLimit: 5 * time.Minute, WallTimeout: 5 * time.Minute, OverallTimeout: 10 * time.Minute,
	}})
	if err != nil {
		return err
	}
	defer closeSandbox(cold)
	goCache := b.f.goCache
	if goCache == "" {
		goCache = filepath.Join(b.dir, "gocache")
	}
	warm, err := b.newSandbox("go-warm", svc.Config{GoBuildCache: goCache})
	if err != nil {
		return err
	}
	defer closeSandbox(warm)
	if err := warm.WaitGoBuildCache(b.ctx); err != nil {
		return fmt.Errorf("the prepared Go build cache: %w", err)
	}

	// A cold build takes seconds: no warm-up, and few samples.
	once := *b
	once.f.warmup = 0
	hostDs, ds, hostCPU, cpu, err := measurePair(&once, min(3, b.f.heavyRuns), hostCold, hostColdCheck, sandbox(cold), sandboxCheck)
	if err != nil {
		return err
	}
	b.cpu = hostCPU
	base := b.add("go", "go build+run cold, host", hostDs, nil, target{})
	b.cpu = cpu
	b.add("go", "go build+run cold, sandbox", ds, base, target{})

	hostDs, ds, hostCPU, cpu, err = measurePair(b, b.f.heavyRuns, hostWarm, hostCheck, sandbox(warm), sandboxCheck)
	if err != nil {
		return err
	}
	b.cpu = hostCPU
	base = b.add("go", "go build+run warm, host", hostDs, nil, target{})
	b.cpu = cpu
	b.add("go", "go build+run warm, sandbox", ds, base, target{"cpu <= 2 s",
		func(r *row) bool { return r.CPU > 0 && r.CPU <= 2*time.Second }})
	return nil
}

func (b *bench) replay() error {
	cache, err := svc.OpenCache(svc.CacheConfig{URL: "dir://" + filepath.Join(b.dir, "cache")})
	if err != nil {
		return fmt.Errorf("step cache: %w", err)
	}
	defer cache.Close()
	sb, err := b.newSandbox("cached", svc.Config{Cache: cache})
	if err != nil {
		return err
	}
	defer closeSandbox(sb)
	yes := true
	req := single(svc.Task{Cmd: "gcc", Args: []string{"-O2", "-o", "hello", "hello.c"},
		Files: map[string]svc.File{"hello.c": {Content: helloC}}, Cache: &yes})
	resp, err := sb.Run(b.ctx, req)
	if err != nil {
		return err
	}
	if err := exitedOK(1)(resp); err != nil {
		return err
	}
	if resp.Cache.StoredSteps != 1 {
		return fmt.Errorf("the compile step was not stored: %+v", resp.Cache)
	}
	ds, err := measure(b, b.f.runs, b.runOp(sb, req), func(resp *svc.Response) error {
		if resp.Cache.ReplayedSteps != 1 {
			return fmt.Errorf("the compile step was not replayed: %+v", resp.Cache)
		}
		return exitedOK(1)(resp)
	})
	if err != nil {
		return err
	}
	b.add("replay", "gcc step replayed", ds, b.bare, target{"median <= 5 ms",
		func(r *row) bool { return r.Median <= 5*time.Millisecond }})
	return nil
}

func (b *bench) width() error {
	for _, w := range []int{1, 4, 8} {
		req := &svc.Request{Steps: []svc.Step{svc.Parallel(slices.Repeat([]svc.Task{{Cmd: "/bin/true"}}, w)...)}}
		ds, err := measure(b, b.f.runs, b.runOp(b.sb, req), exitedOK(1))
		if err != nil {
			return fmt.Errorf("width %d: %w", w, err)
		}
		for i := range ds {
			ds[i] /= time.Duration(w)
		}
		b.cpu /= time.Duration(w)
		b.add("width", fmt.Sprintf("parallel x%d, per task", w), ds, b.bare, target{})
	}
	return nil
}

func (b *bench) output() error {
	sb, err := b.newSandbox("output", svc.Config{Limits: svc.Limits{OutputLimit: 32 * svc.MiB, RequestOutputLimit: 64 * svc.MiB}})
	if err != nil {
		return err
	}
	defer closeSandbox(sb)
	for _, size := range []int{svc.KiB, svc.MiB, 16 * svc.MiB} {
		n, t := b.f.runs, target{}
		if size == 16*svc.MiB {
			n = b.f.heavyRuns
			t = target{"extra < 1 s", func(r *row) bool { return r.Extra < time.Second }}
		}
		args := []string{"-c", strconv.Itoa(size), "/dev/zero"}
		host := func() ([]byte, error) { return exec.Command("head", args...).Output() }
		ds, err := measure(b, n, host, func(out []byte) error {
			if len(out) != size {
				return fmt.Errorf("host head wrote %d bytes, want %d", len(out), size)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s on the host: %w", sizeName(size), err)
		}
		base := b.add("output", "stdout "+sizeName(size)+", host", ds, nil, target{})
		req := single(svc.Task{Cmd: "head", Args: args})
		ds, err = measure(b, n, b.runOp(sb, req), func(resp *svc.Response) error {
			if err := exitedOK(1)(resp); err != nil {
				return err
			}
			if r := resp.Results[0].Results[0]; len(r.Stdout) != size || r.StdoutTruncated {
				return fmt.Errorf("stdout of %d bytes (truncated %t), want %d", len(r.Stdout), r.StdoutTruncated, size)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", sizeName(size), err)
		}
		b.add("output", "stdout "+sizeName(size)+", sandbox", ds, base, t)
	}
	return nil
}

func (b *bench) file() error {
	const size = 64 * svc.MiB
	content := io.LimitReader(rand.NewChaCha8([32]byte{}), size)
	stored, _, err := b.files.Put(b.ctx, content, "big", "")
	if err != nil {
		return fmt.Errorf("store a 64 MiB file: %w", err)
	}
	defer b.files.Delete(stored.ID)
	ds, err := measure(b, b.f.runs, b.runOp(b.sb, single(svc.Task{Cmd: "/bin/true"})), exitedOK(1))
	if err != nil {
		return err
	}
	base := b.add("file", "no file", ds, b.bare, target{})
	withFile := single(svc.Task{Cmd: "/bin/true", Files: map[string]svc.File{"big": {FileID: stored.ID}}})
	ds, err = measure(b, b.f.heavyRuns, b.runOp(b.sb, withFile), exitedOK(1))
	if err != nil {
		return err
	}
	b.add("file", "64 MiB stored file", ds, base, target{})
	return nil
}

// printTable writes the machine facts and the rows as an aligned table.
func printTable(w io.Writer, m machine, rows []*row) error {
	fmt.Fprintf(w, "svc bench: %d CPUs, Linux %s, cgroup v%d, %s, %d task slots, load average %s at start, %s\n",
		m.CPUs, m.Kernel, m.Cgroup, m.Go, m.Slots, m.LoadAvg, m.Time.Format(time.RFC3339))
	fmt.Fprintln(w, `bare: exec.Command("/bin/true").Run() in turn, sampled first and last; "bare" is both together, the baseline of every row compared with bare`)
	fmt.Fprintln(w, "http: POST /execute with an API key to the httpapi handler on 127.0.0.1, a net/http client with keep-alive")
	fmt.Fprintln(w)
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "row\tn\tmedian\tp99\tcpu\treq/s\tvs\tratio\tp99 ratio\textra\ttarget\tresult")
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\terror: %s\n", r.Name, r.Error)
			continue
		}
		cells := []string{r.Name, strconv.Itoa(r.Samples), fmtDur(r.Median), fmtDur(r.P99), "", "", "", "", "", "", r.Target, ""}
		if r.CPU > 0 {
			cells[4] = fmtDur(r.CPU)
		}
		if r.PerSecond > 0 {
			cells[5] = fmt.Sprintf("%.0f", r.PerSecond)
		}
		if r.base != nil {
			cells[6], cells[7] = r.Baseline, fmt.Sprintf("%.2fx", r.Ratio)
			if r.PerSecond == 0 {
				cells[8], cells[9] = fmt.Sprintf("%.2fx", r.RatioP99), fmtDur(r.Extra)
			}
		}
		if r.Pass != nil {
			cells[11] = map[bool]string{true: "pass", false: "MISS"}[*r.Pass]
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(table.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
	_, err := fmt.Fprintln(w, "\nmedian, p99: of the row's samples (p99 by nearest rank); ratio: median over the median of vs (req/s rows: req/s over that of vs);\np99 ratio: p99 over the p99 of vs; extra: median less the median of vs; cpu: busy CPU time of the whole machine per sample\n(every process and kernel thread, from /proc/stat; 10 ms ticks), what bounds the throughput. Throughput rows give each request's latency too.")
	return err
}

// fmtDur prints d in milliseconds with three significant digits or so.
func fmtDur(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case math.Abs(ms) < 10:
		return fmt.Sprintf("%.3f ms", ms)
	case math.Abs(ms) < 100:
		return fmt.Sprintf("%.2f ms", ms)
	}
	return fmt.Sprintf("%.1f ms", ms)
}

func sizeName(n int) string {
	if n >= svc.MiB {
		return fmt.Sprintf("%d MiB", n/svc.MiB)
	}
	return fmt.Sprintf("%d KiB", n/svc.KiB)
}

// loadAvg returns the 1, 5 and 15 minute load averages.
func loadAvg() string {
	f := strings.Fields(readTrim("/proc/loadavg"))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func readTrim(name string) string {
	b, err := os.ReadFile(name)
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// pingRounds is the number of round trips of a sample of the interactive
// figure.
const pingRounds = 10000

// interactive measures the round trip of a line between two tasks that
// feed each other, through the service's relays, next to the same two
// programs joined by two pipes on the host. The pinger is compiled once
// on the host and placed by file_id; a sample is its own average over
// pingRounds round trips, so that neither the sandboxes' start nor the
// processes' counts.
func (b *bench) interactive() error {
	dir, err := os.MkdirTemp(b.dir, "host-ping-")
	if err != nil {
		return err
	}
	src, bin := filepath.Join(dir, "ping.c"), filepath.Join(dir, "ping")
	if err := os.WriteFile(src, []byte(pingpong.Source), 0o644); err != nil {
		return err
	}
	if out, err := exec.Command("gcc", "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		return fmt.Errorf("gcc: %w: %s", err, out)
	}
	f, err := os.Open(bin)
	if err != nil {
		return err
	}
	stored, _, err := b.files.Put(b.ctx, f, "ping", "")
	f.Close()
	if err != nil {
		return err
	}
	defer b.files.Delete(stored.ID)
	rounds := strconv.Itoa(pingRounds)
	host := func() (time.Duration, error) {
		ping, cat := exec.Command(bin, rounds), exec.Command("cat")
		var err error
		if cat.Stdin, err = ping.StdoutPipe(); err != nil {
			return 0, err
		}
		if ping.Stdin, err = cat.StdoutPipe(); err != nil {
			return 0, err
		}
		var stderr bytes.Buffer
		ping.Stderr = &stderr
		if err := cat.Start(); err != nil {
			return 0, err
		}
		err = ping.Run()
		if werr := cat.Wait(); err == nil {
			err = werr
		}
		if err != nil {
			return 0, fmt.Errorf("host ping: %w: %s", err, stderr.Bytes())
		}
		return roundTrip(stderr.String())
	}
	zero, one := 0, 1
	req := &svc.Request{StopOnFailure: true, Steps: []svc.Step{
		// Placed files are not executable.
		svc.Single(svc.Task{Cmd: "chmod", Args: []string{"755", "ping"}, Files: map[string]svc.File{"ping": {FileID: stored.ID}}}),
		svc.Parallel(
			svc.Task{Cmd: "./ping", Args: []string{rounds}, StdinFrom: &one, SandboxProfile: svc.ProfileNativeV2},
			svc.Task{Cmd: "cat", StdinFrom: &zero, SandboxProfile: svc.ProfileNativeV2},
		),
	}}
	sandbox := func() (time.Duration, error) {
		resp, err := b.sb.Run(b.ctx, req)
		if err != nil {
			return 0, err
		}
		if err := exitedOK(2)(resp); err != nil {
			return 0, err
		}
		return roundTrip(resp.Results[1].Results[0].Stderr)
	}
	var hostDs, ds []time.Duration
	for i := range b.f.warmup + b.f.heavyRuns {
		if err := b.ctx.Err(); err != nil {
			return err
		}
		// In turn, each first every other time.
		first, second := host, sandbox
		if i%2 == 1 {
			first, second = sandbox, host
		}
		d1, err := first()
		if err != nil {
			return err
		}
		d2, err := second()
		if err != nil {
			return err
		}
		if i < b.f.warmup {
			continue
		}
		if i%2 == 1 {
			d1, d2 = d2, d1
		}
		hostDs, ds = append(hostDs, d1), append(ds, d2)
	}
	b.cpu = 0
	base := b.add("interactive", "ping-pong round trip, host pipes", hostDs, nil, target{})
	b.add("interactive", "ping-pong round trip, sandboxes", ds, base, target{})
	return nil
}

// roundTrip reads the pinger's figure.
func roundTrip(stderr string) (time.Duration, error) {
	ns, err := strconv.ParseInt(strings.TrimSpace(stderr), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("the pinger wrote %q", stderr)
	}
	return time.Duration(ns), nil
}
