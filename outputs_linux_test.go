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

var _ = fmt.Sprint
var _ = filepath.Join
var _ = os.Getpid
var _ = time.Now
