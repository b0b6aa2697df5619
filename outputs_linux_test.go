package svc_test

// Collected outputs (Task.Outputs) through real sandboxes: what a task
// leaves is stored like an upload, and every hostile thing a task can
// leave at an output's path gives its error entry, never a host file,
// never a hang. They need root: see newSandbox.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
)

// outputsSandbox returns a Sandbox with a file store of fcfg (a fresh
// directory when fcfg.Dir is ""), both closed at cleanup.
func outputsSandbox(t testing.TB, cfg svc.Config, fcfg svc.FileStoreConfig) (*svc.Sandbox, *svc.FileStore) {
	t.Helper()
	requireRoot(t)
	if fcfg.Dir == "" {
		fcfg.Dir = t.TempDir()
	}
	fs, err := svc.OpenFileStore(fcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	cfg.Files = fs
	return newSandbox(t, cfg), fs
}

// content returns the content of the stored file id.
func content(t testing.TB, fs *svc.FileStore, id string) string {
	t.Helper()
	f, _, err := fs.Open(id)
	if err != nil {
		t.Fatalf("open output %s: %v", id, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// wantOutput checks that the output at p is the stored file with content.
func wantOutput(t testing.TB, fs *svc.FileStore, r svc.Result, p, content_ string) {
	t.Helper()
	o, ok := r.Outputs[p]
	switch {
	case !ok:
		t.Errorf("no output %q in %v", p, r.Outputs)
	case o.Error != "":
		t.Errorf("output %q: error %s, want a file of %d bytes", p, o.Error, len(content_))
	case o.FileID != sha(content_) || o.Size != int64(len(content_)):
		t.Errorf("output %q: %+v, want id %s, size %d", p, o, sha(content_), len(content_))
	default:
		if got := content(t, fs, o.FileID); got != content_ {
			t.Errorf("output %q holds %.80q, want %.80q", p, got, content_)
		}
	}
}

// wantOutputError checks that the output at p is the error e.
func wantOutputError(t testing.TB, r svc.Result, p string, e svc.OutputError) {
	t.Helper()
	if o, ok := r.Outputs[p]; !ok || o != (svc.OutputFile{Error: e}) {
		t.Errorf("output %q: %+v (present %v), want error %s\nstdout: %s\nstderr: %s", p, o, ok, e, clip(r.Stdout), clip(r.Stderr))
	}
}

func TestOutputsCollected(t *testing.T) {
	sb, fs := outputsSandbox(t, svc.Config{}, svc.FileStoreConfig{})
	task := sh(`printf 'hello world\n' > out.txt; mkdir -p d/e; printf 'hello world\n' > d/e/same.txt
		: > empty; printf '\000\377bin' > bin.dat; mkdir dir; exit 3`)
	task.Outputs = []string{"out.txt", "./d//e/same.txt", "empty", "bin.dat", "missing.txt", "dir", "out.txt/x", "d/missing/x"}
	r := one(t, sb, task)
	expect(t, r, svc.OutcomeExited, 3) // whatever the outcome
	if len(r.Outputs) != len(task.Outputs) {
		t.Errorf("outputs %v, want one for each of %q", r.Outputs, task.Outputs)
	}
	wantOutput(t, fs, r, "out.txt", "hello world\n")
	// Keyed by the normal form; the same bytes are one stored file.
	wantOutput(t, fs, r, "d/e/same.txt", "hello world\n")
	wantOutput(t, fs, r, "empty", "")
	wantOutput(t, fs, r, "bin.dat", "\x00\xffbin")
	wantOutputError(t, r, "missing.txt", svc.OutputNotFound)
	wantOutputError(t, r, "out.txt/x", svc.OutputNotFound)
	wantOutputError(t, r, "d/missing/x", svc.OutputNotFound)
	wantOutputError(t, r, "dir", svc.OutputNotRegular)

	// Stored like an upload: named by its base name, no content type; an
	// upload of the same bytes finds it.
	info, err := fs.Stat(sha("hello world\n"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Filename == nil || (*info.Filename != "out.txt" && *info.Filename != "same.txt") || info.ContentType != nil {
		t.Errorf("stored as %+v, want the name out.txt or same.txt and no content type", info)
	}
	if _, exists, err := fs.Put(context.Background(), strings.NewReader("hello world\n"), "up.txt", ""); err != nil || !exists {
		t.Errorf("an upload of the same bytes: exists %v, %v", exists, err)
	}
	if n, _ := fs.Usage(); n != 3 {
		t.Errorf("%d files stored, want 3 (hello world, empty, bin.dat)", n)
	}
}

// TestOutputsOnlyWhereAsked: a task without outputs has none; a task
// that did not run has none, even when it asked.
func TestOutputsOnlyWhereAsked(t *testing.T) {
	sb, _ := outputsSandbox(t, svc.Config{}, svc.FileStoreConfig{})
	with := sh("echo a > a.txt; exit 1")
	with.Outputs = []string{"a.txt"}
	later := sh("true")
	later.Outputs = []string{"a.txt"}
	noDir := sh("true")
	noDir.WorkingDir, noDir.Outputs = "/svc/nowhere", []string{"a.txt"}
	resp, err := sb.Run(context.Background(), &svc.Request{StopOnFailure: true, Steps: []svc.Step{
		svc.Parallel(with, sh("true"), noDir),
		svc.Single(later),
	}})
	if err != nil {
		t.Fatal(err)
	}
	step := resp.Results[0].Results
	if step[0].Outputs == nil || step[1].Outputs != nil {
		t.Errorf("outputs %v and %v, want some for the first task only", step[0].Outputs, step[1].Outputs)
	}
	if r := step[2]; r.Outcome != svc.OutcomeInfrastructureFailure || r.Outputs != nil {
		t.Errorf("a task whose working dir is missing: %s, outputs %v", r.Outcome, r.Outputs)
	}
	if r := resp.Results[1].Results[0]; r.Outcome != svc.OutcomeNotStarted || r.Outputs != nil {
		t.Errorf("a step not started: %s, outputs %v", r.Outcome, r.Outputs)
	}
}

// TestOutputsNoFileStore: without a file store a request with outputs is
// refused, naming the field, and nothing runs.
func TestOutputsNoFileStore(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	task := sh("echo ran > ran.txt")
	task.Outputs = []string{"ran.txt"}
	_, err := sb.Run(context.Background(), &svc.Request{Steps: []svc.Step{svc.Single(sh("true")), svc.Parallel(sh("true"), task)}})
	var e *svc.Error
	if !errorsAs(err, &e) || e.Code != svc.CodeInvalidRequest || e.Msg != "steps[1][1].outputs: the service has no file store to keep outputs in" {
		t.Fatalf("Run: %v, want invalid_request naming steps[1][1].outputs", err)
	}
}

func errorsAs(err error, e **svc.Error) bool {
	x, ok := err.(*svc.Error)
	*e = x
	return ok
}

// TestOutputsHostile: a task leaves at an output's path everything that
// could make the service read what is not the task's own regular file,
// or hang. Each gives its error entry. Reading follows no symlink at any
// component, so no target, the host's or another request's, is reached.
func TestOutputsHostile(t *testing.T) {
	const limit = svc.MiB
	sb, fs := outputsSandbox(t, svc.Config{Limits: svc.Limits{UploadFileLimit: limit}}, svc.FileStoreConfig{})
	collect := func(t *testing.T, script string, outputs ...string) svc.Result {
		t.Helper()
		task := sh(script)
		task.Outputs = outputs
		r := one(t, sb, task)
		expect(t, r, svc.OutcomeExited, 0)
		return r
	}

	t.Run("symlinks to host files", func(t *testing.T) {
		r := collect(t, "ln -s /etc/shadow shadow; ln -s /etc/passwd passwd; ln -s ../../../../../../etc/hostname rel",
			"shadow", "passwd", "rel")
		for _, p := range []string{"shadow", "passwd", "rel"} {
			wantOutputError(t, r, p, svc.OutputNotRegular)
		}
	})
	t.Run("a symlinked directory component", func(t *testing.T) {
		// d -> /etc: d/passwd is the host's only if d is followed. A
		// symlink to a directory of the workspace is refused as well.
		r := collect(t, "ln -s /etc d; mkdir real; echo mine > real/f; ln -s real link; ln -s /etc/passwd f2; mkdir e; ln -s ../f2 e/f",
			"d/passwd", "d/shadow", "link/f", "real/f", "e/f")
		wantOutputError(t, r, "d/passwd", svc.OutputNotRegular)
		wantOutputError(t, r, "d/shadow", svc.OutputNotRegular)
		wantOutputError(t, r, "link/f", svc.OutputNotRegular)
		wantOutputError(t, r, "e/f", svc.OutputNotRegular)
		wantOutput(t, fs, r, "real/f", "mine\n")
	})
	t.Run("a FIFO, a socket, a directory", func(t *testing.T) {
		// Opening a FIFO for reading would wait for a writer: it must
		// not (a hang fails the test by its timeout).
		r := collect(t, `mkfifo fifo && python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("sock")' && mkdir dir && ls -l`,
			"fifo", "sock", "dir")
		for _, p := range []string{"fifo", "sock", "dir"} {
			wantOutputError(t, r, p, svc.OutputNotRegular)
		}
	})
	t.Run("device nodes and hard links cannot be made", func(t *testing.T) {
		// mknod is refused in the sandbox (and the workspace is mounted
		// nodev: a device there would not even open). A hard link to a
		// host file crosses filesystems, and one to /tmp crosses mounts
		// (the request's tmpfs is bound at /svc and /tmp apart): both
		// EXDEV. A hard link joins two files of the workspace only: the
		// task's own content, which is what it gets.
		r := collect(t, `mknod null c 1 3 2>/dev/null && echo mknod made a device
			ln /etc/passwd hard 2>/dev/null && echo ln made a hard link to the host
			echo tmp > /tmp/own && ln /tmp/own tmp 2>/dev/null && echo ln made a hard link to /tmp
			echo own > own && ln own mine; true`,
			"null", "hard", "tmp", "mine")
		if r.Stdout != "" {
			t.Errorf("the task did what it must not: %s", r.Stdout)
		}
		wantOutputError(t, r, "null", svc.OutputNotFound)
		wantOutputError(t, r, "hard", svc.OutputNotFound)
		wantOutputError(t, r, "tmp", svc.OutputNotFound)
		wantOutput(t, fs, r, "mine", "own\n")
	})
	t.Run("a huge sparse file", func(t *testing.T) {
		// too_large by its size, read not at all: the store holds no
		// trace of it. A task cannot make one past the workspace size
		// (RLIMIT_FSIZE): truncate -s 100G fails.
		before, _ := fs.Usage()
		r := collect(t, `truncate -s 200M sparse && truncate -s 1048577 over && truncate -s 1048576 at
			trap '' XFSZ; truncate -s 100G huge 2>/dev/null || echo 100G refused`,
			"sparse", "over", "at")
		if r.Stdout != "100G refused\n" {
			t.Errorf("stdout %q", r.Stdout)
		}
		wantOutputError(t, r, "sparse", svc.OutputTooLarge)
		wantOutputError(t, r, "over", svc.OutputTooLarge)
		wantOutput(t, fs, r, "at", strings.Repeat("\x00", limit))
		if after, _ := fs.Usage(); after != before+1 {
			t.Errorf("%d files stored, want %d: the one at the limit", after, before+1)
		}
	})
	t.Run("another request's workspace", func(t *testing.T) {
		otherRequestsFile(t, sb, func(host, rel string) {
			r := collect(t, fmt.Sprintf("ln -s %s abs.txt; ln -s %s rel.txt", host, rel), "abs.txt", "rel.txt")
			wantOutputError(t, r, "abs.txt", svc.OutputNotRegular)
			wantOutputError(t, r, "rel.txt", svc.OutputNotRegular)
		})
	})
}

// otherRequestsFile runs a request of sb whose task writes secret.txt
// and waits; while it waits, f gets the host path of that file and the
// path relative to the workspace of any other request of sb.
func otherRequestsFile(t *testing.T, sb *svc.Sandbox, f func(host, rel string)) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		r, err := sb.Run(context.Background(), &svc.Request{Steps: []svc.Step{
			svc.Single(sh("echo other request > secret.txt; until [ -e release ]; do sleep 0.01; done")),
		}})
		if err == nil && r.Results[0].Results[0].Outcome != svc.OutcomeExited {
			err = fmt.Errorf("the other request's task: %+v", r.Results[0].Results[0])
		}
		done <- err
	}()
	pattern := filepath.Join(sb.Config().StateDir, "run", "*", "svc", "secret.txt")
	var host string
	for deadline := time.Now().Add(30 * time.Second); host == ""; {
		m, _ := filepath.Glob(pattern)
		if len(m) == 1 {
			host = m[0]
		} else if time.Now().After(deadline) {
			t.Fatalf("no %s", pattern)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// From run/<this request>/svc: up to run/, down to the other's.
	id := filepath.Base(filepath.Dir(filepath.Dir(host)))
	f(host, "../../"+id+"/svc/secret.txt")
	if err := os.WriteFile(filepath.Join(filepath.Dir(host), "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestOutputsGrowingFile: a writer left running in the background when
// its task ends dies with it (every process of a task is in its PID
// namespace), so an output is read after the last write: its size is
// the file's size, then and in the next step.
func TestOutputsGrowingFile(t *testing.T) {
	sb, fs := outputsSandbox(t, svc.Config{}, svc.FileStoreConfig{})
	// The task naming the output ends first, once the file grows; the
	// writer's task leaves it running and ends last.
	reader := sh("until [ -s grow.txt ]; do sleep 0.01; done")
	reader.Outputs = []string{"grow.txt"}
	writer := sh("(while :; do echo x >> grow.txt; done) & sleep 0.3; exit 0")
	// A task that names its own output and leaves its writer running.
	self := sh("(while :; do echo y >> self.txt; done) & until [ -s self.txt ]; do :; done; exit 0")
	self.Outputs = []string{"self.txt"}
	resp := run(t, sb,
		svc.Parallel(reader, writer),
		svc.Single(self),
		svc.Single(sh("stat -c %s grow.txt self.txt; sleep 0.2; stat -c %s grow.txt self.txt")))
	for _, c := range []struct {
		r    svc.Result
		p    string
		line string
	}{{resp.Results[0].Results[0], "grow.txt", "x\n"}, {resp.Results[1].Results[0], "self.txt", "y\n"}} {
		expect(t, c.r, svc.OutcomeExited, 0)
		o := c.r.Outputs[c.p]
		if o.Error != "" || o.Size == 0 || o.Size%2 != 0 {
			t.Fatalf("%s: %+v", c.p, o)
		}
		wantOutput(t, fs, c.r, c.p, strings.Repeat(c.line, int(o.Size/2)))
	}
	sizes := strings.Fields(resp.Results[2].Results[0].Stdout)
	want := []string{fmt.Sprint(resp.Results[0].Results[0].Outputs["grow.txt"].Size), fmt.Sprint(resp.Results[1].Results[0].Outputs["self.txt"].Size)}
	if len(sizes) != 4 || sizes[0] != want[0] || sizes[2] != want[0] || sizes[1] != want[1] || sizes[3] != want[1] {
		t.Errorf("sizes in the next step %q, want %q twice: the outputs' sizes", sizes, want)
	}
}

// TestOutputsSwappedForSymlink: while a task reads nothing yet, a task of
// the same step swaps out.txt between a regular file and a symlink to
// /etc/shadow, in a loop and in a background loop it leaves running.
// Every process is gone before the read, so whatever state the swaps end
// in, the output is the regular file's content or not_regular, never the
// host's file.
func TestOutputsSwappedForSymlink(t *testing.T) {
	sb, fs := outputsSandbox(t, svc.Config{}, svc.FileStoreConfig{})
	swap := `swap() { echo data > f.$1 && mv -f f.$1 out.txt; ln -s /etc/shadow l.$1 && mv -fT l.$1 out.txt; }
		(i=0; while :; do swap bg$i; i=$((i+1)); done) &
		i=0; while [ $i -lt $1 ]; do swap $i; i=$((i+1)); done
		[ "$2" = file ] && echo data > f.end && mv -f f.end out.txt
		exit 0`
	seen := map[string]bool{}
	for i := range 6 {
		end := []string{"file", "link"}[i%2]
		swapper := svc.Task{Cmd: "sh", Args: []string{"-c", swap, "sh", fmt.Sprint(20 + 13*i), end}}
		reader := sh("until [ -e out.txt ] || [ -L out.txt ]; do :; done")
		reader.Outputs = []string{"out.txt"}
		r := run(t, sb, svc.Parallel(reader, swapper)).Results[0].Results[0]
		expect(t, r, svc.OutcomeExited, 0)
		switch o := r.Outputs["out.txt"]; {
		case o.Error == svc.OutputNotRegular:
			seen["not_regular"] = true
		case o.Error == "":
			wantOutput(t, fs, r, "out.txt", "data\n")
			seen["file"] = true
		default:
			t.Errorf("run %d: output %+v", i, o)
		}
	}
	t.Logf("end states seen: %v", seen)
}

// TestOutputsStoreFull: an output the file store has no room for is
// store_full, and the request still answers; the others are stored, and
// content stored already needs no room.
func TestOutputsStoreFull(t *testing.T) {
	sb, fs := outputsSandbox(t, svc.Config{}, svc.FileStoreConfig{MaxBytes: 1000})
	task := sh("head -c 600 /dev/zero > a; head -c 600 /dev/zero | tr '\\0' b > b; cp a c; echo small > d")
	task.Outputs = []string{"a", "b", "c", "d"}
	r := one(t, sb, task)
	expect(t, r, svc.OutcomeExited, 0)
	wantOutput(t, fs, r, "a", strings.Repeat("\x00", 600))
	wantOutputError(t, r, "b", svc.OutputStoreFull)
	wantOutput(t, fs, r, "c", strings.Repeat("\x00", 600))
	wantOutput(t, fs, r, "d", "small\n")
	if n, size := fs.Usage(); n != 2 || size != 606 {
		t.Errorf("store usage %d files, %d bytes; want 2, 606", n, size)
	}
}

// TestOutputsExpire: an output expires FileStoreConfig.TTL after it was
// stored or last output again, as an upload does after its last upload
// or use.
func TestOutputsExpire(t *testing.T) {
	clock := newTestClock()
	sb, fs := outputsSandbox(t, svc.Config{}, svc.FileStoreConfig{TTL: time.Hour, Now: clock.Now})
	task := sh("echo kept > out.txt")
	task.Outputs = []string{"out.txt"}
	id := one(t, sb, task).Outputs["out.txt"].FileID
	clock.Add(50 * time.Minute)
	if _, err := fs.Stat(id); err != nil {
		t.Fatalf("after 50 minutes: %v", err)
	}
	if got := one(t, sb, task).Outputs["out.txt"].FileID; got != id {
		t.Fatalf("output again: %s, want %s", got, id)
	}
	clock.Add(50 * time.Minute)
	if _, err := fs.Stat(id); err != nil {
		t.Fatalf("50 minutes after the output again: %v", err)
	}
	clock.Add(11 * time.Minute)
	if _, err := fs.Stat(id); svc.CodeOf(err) != svc.CodeNotFound {
		t.Fatalf("an hour and a minute after the last output: %v, want not_found", err)
	}
}

// TestOutputsReplayed: a replayed step has the outputs its run had; the
// files the store lacks (deleted here) are stored again, read from the
// workspace the replay left, an output of an earlier step included.
func TestOutputsReplayed(t *testing.T) {
	c := newCache(t, svc.CacheConfig{})
	fsDir := t.TempDir()
	fs, err := svc.OpenFileStore(svc.FileStoreConfig{Dir: fsDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	sb := newCacheSandbox(t, c, svc.Config{Files: fs})
	tag := fmt.Sprint(time.Now().UnixNano())
	first := sh("echo first " + tag + " > out.txt; mkdir d; ln -s /etc/passwd d/link")
	first.Outputs = []string{"out.txt", "d/link", "missing"}
	second := sh("echo second > out2.txt")
	second.Outputs = []string{"out.txt", "out2.txt"}
	req := func() *svc.Request { return cached(svc.Single(first), svc.Single(second)) }

	ran := runReq(t, sb, req())
	wantSummary(t, ran, 0, 2)
	for _, sr := range ran.Results {
		expect(t, sr.Results[0], svc.OutcomeExited, 0)
	}
	wantOutput(t, fs, ran.Results[0].Results[0], "out.txt", "first "+tag+"\n")
	wantOutputError(t, ran.Results[0].Results[0], "d/link", svc.OutputNotRegular)
	wantOutputError(t, ran.Results[0].Results[0], "missing", svc.OutputNotFound)
	wantOutput(t, fs, ran.Results[1].Results[0], "out2.txt", "second\n")

	same := func(t *testing.T, resp *svc.Response) {
		t.Helper()
		wantSummary(t, resp, 2, 0)
		for i := range resp.Results {
			got, want := resp.Results[i].Results[0], ran.Results[i].Results[0]
			if !got.Replayed || !reflect.DeepEqual(got.Outputs, want.Outputs) {
				t.Errorf("step %d: replayed %v, outputs %v, want %v", i, got.Replayed, got.Outputs, want.Outputs)
			}
		}
		wantOutput(t, fs, resp.Results[0].Results[0], "out.txt", "first "+tag+"\n")
		wantOutput(t, fs, resp.Results[1].Results[0], "out.txt", "first "+tag+"\n")
		wantOutput(t, fs, resp.Results[1].Results[0], "out2.txt", "second\n")
	}
	t.Run("the store has them", func(t *testing.T) {
		n, size := fs.Usage()
		same(t, runReq(t, sb, req()))
		if n2, size2 := fs.Usage(); n2 != n || size2 != size {
			t.Errorf("store usage %d files, %d bytes; was %d, %d", n2, size2, n, size)
		}
	})
	t.Run("the store lost them", func(t *testing.T) {
		for _, o := range []svc.OutputFile{ran.Results[0].Results[0].Outputs["out.txt"], ran.Results[1].Results[0].Outputs["out2.txt"]} {
			if err := fs.Delete(o.FileID); err != nil {
				t.Fatal(err)
			}
		}
		same(t, runReq(t, sb, req()))
	})
}

// BenchmarkRunOutput is BenchmarkRunTrue with one small file placed
// (Files), without and with collecting it as an output: the same bytes
// each time (stored already: hashed, found, its expiry refreshed), or
// new bytes each time (stored: a temporary written and synced, then its
// metadata and the rename, each made durable). cpu-ns/op is the
// service's CPU time, as in BenchmarkRunTrue.
func BenchmarkRunOutput(b *testing.B) {
	for _, bc := range []struct {
		name    string
		outputs []string
		fresh   bool
	}{{"none", nil, false}, {"same", []string{"out.txt"}, false}, {"new", []string{"out.txt"}, true}} {
		b.Run(bc.name, func(b *testing.B) {
			sb, _ := outputsSandbox(b, svc.Config{}, svc.FileStoreConfig{})
			i := 0
			cpu := processCPU()
			for b.Loop() {
				content := "small output\n"
				if bc.fresh {
					i++
					content = fmt.Sprintf("small output %d\n", i)
				}
				req := &svc.Request{Steps: []svc.Step{svc.Single(svc.Task{Cmd: "/bin/true",
					Files: map[string]svc.File{"out.txt": {Content: content}}, Outputs: bc.outputs})}}
				resp, err := sb.Run(context.Background(), req)
				if err != nil {
					b.Fatal(err)
				}
				r := resp.Results[0].Results[0]
				if r.Outcome != svc.OutcomeExited || r.ExitCode != 0 || (bc.outputs != nil && r.Outputs["out.txt"].FileID == "") {
					b.Fatalf("%+v", r)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
