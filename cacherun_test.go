package svc

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeWorkspace is a workspace without a sandbox: an in-memory tree of
// files in which a task is one of two commands. "write PATH TEXT" writes
// TEXT to PATH and prints it; "cat PATH" prints the content of PATH, or
// exits 1 when there is none. It captures and replays layers as the
// Linux workspace does, through the same tree snapshots and layer
// encoding, so the cache's walk runs on it unchanged and without root.
type fakeWorkspace struct {
	files   map[string]fakeFile
	version int64 // of the last write: each write stamps a new one

	ran       []string // the commands run, in order
	failApply int      // how many replays fail next, with half a layer applied
	resets    int
	spent     int64 // replayed output taken from the budget
}

type fakeFile struct {
	content string
	version int64 // the write that made it: its inode number and times
}

var _ workspace = (*fakeWorkspace)(nil)

func newFakeWorkspace() *fakeWorkspace { return &fakeWorkspace{files: make(map[string]fakeFile)} }

func (w *fakeWorkspace) write(p, content string) {
	w.version++
	w.files[p] = fakeFile{content: content, version: w.version}
}

func (w *fakeWorkspace) identity() int                       { return 0 }
func (w *fakeWorkspace) lacksGoCache() bool                  { return false }
func (w *fakeWorkspace) prepare(context.Context, []taskPlan) {}
func (w *fakeWorkspace) discardCells()                       {}
func (w *fakeWorkspace) close() error                        { return nil }

func (w *fakeWorkspace) runStep(_ context.Context, step *stepPlan, _ storedFiles) (StepResult, error) {
	sr := StepResult{Parallel: step.parallel, Results: make([]Result, len(step.tasks))}
	for i, t := range step.tasks {
		w.ran = append(w.ran, strings.Join(append([]string{t.Cmd}, t.Args...), " "))
		r := Result{Outcome: OutcomeExited}
		switch t.Cmd {
		case "write":
			w.write(t.Args[0], t.Args[1])
			r.Stdout = t.Args[1]
		case "cat":
			if f, ok := w.files[t.Args[0]]; ok {
				r.Stdout = f.content
			} else {
				r.ExitCode, r.Stderr = 1, "no such file"
			}
		}
		sr.Results[i] = r
	}
	return sr, nil
}

// snapshot lists the workspace and its files. Their times are long past,
// so no entry counts as racily changed: what changed has a new version.
func (w *fakeWorkspace) snapshot() (*tree, error) {
	t := newTree()
	past := time.Unix(1_000_000_000, 0)
	t.add(".", treeNode{kind: kindDir, mode: 0o755, mtime: past, ctime: past})
	for _, p := range sortedKeys(w.files) {
		f := w.files[p]
		ts := past.Add(time.Duration(f.version) * time.Second)
		t.add(p, treeNode{kind: kindFile, mode: 0o644, size: int64(len(f.content)), ino: uint64(f.version), mtime: ts, ctime: ts})
	}
	return t, nil
}

func (w *fakeWorkspace) writeLayer(lw *layerWriter, changes []layerEntry, _ *tree) error {
	for i := range changes {
		e := &changes[i]
		if err := lw.entry(e); err != nil {
			return err
		}
		if e.kind == kindFile {
			if err := lw.content(strings.NewReader(w.files[e.path].content), e.size); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *fakeWorkspace) applyLayer(l *layer, key string) error {
	if w.failApply > 0 {
		w.failApply--
		w.write("half-applied", "")
		return errors.New("no space left on device")
	}
	return l.entries(key, func(e *layerEntry, content io.Reader) error {
		switch e.kind {
		case kindWhiteout:
			delete(w.files, e.path)
		case kindFile:
			b, err := io.ReadAll(content)
			if err != nil {
				return err
			}
			w.write(e.path, string(b))
		}
		return nil
	})
}

// openOutput opens a file of the fake workspace; it has no directories,
// symlinks or devices.
func (w *fakeWorkspace) openOutput(p string) (outputReader, int64, error) {
	f, ok := w.files[p]
	if !ok {
		return nil, 0, errOutputNotFound
	}
	return nopCloserAt{strings.NewReader(f.content)}, int64(len(f.content)), nil
}

type nopCloserAt struct{ io.ReaderAt }

func (nopCloserAt) Close() error { return nil }

func (w *fakeWorkspace) spendOutput(sr StepResult) {
	for _, r := range sr.Results {
		w.spent += int64(len(r.Stdout) + len(r.Stderr))
	}
}

func (w *fakeWorkspace) reset() error {
	w.files = make(map[string]fakeFile)
	w.resets++
	return nil
}

// TestCacheWalk drives one request's walk through the step cache (plan,
// execute and answer, over a dir:// store) with fake workspaces: a miss
// executes each step and stores it, the same request then replays both,
// and a replay that fails starts the request over in an emptied
// workspace, executing and storing every step again.
func TestCacheWalk(t *testing.T) {
	c := testCache(t, CacheConfig{})
	cfg, err := Config{Cache: c}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	s := &Sandbox{cfg: cfg, limits: cfg.Limits, log: cfg.Logger}
	s.closing, s.close = context.WithCancelCause(context.Background())
	run := func(t *testing.T, ws *fakeWorkspace) *Response {
		t.Helper()
		req := &Request{Cache: true, Steps: []Step{
			Single(Task{Cmd: "write", Args: []string{"a.txt", "A"}}),
			Single(Task{Cmd: "cat", Args: []string{"a.txt"}}),
		}}
		p, err := s.plan(req)
		if err != nil {
			t.Fatal(err)
		}
		defer p.close()
		ctx := context.Background()
		ex, err := s.execute(ctx, ws, p, time.Now().Add(time.Minute))
		resp, err := s.answer(ctx, ctx, req, ex, err)
		if err != nil {
			t.Fatal(err)
		}
		for i, sr := range resp.Results {
			if r := sr.Results[0]; r.Outcome != OutcomeExited || r.ExitCode != 0 || r.Stdout != "A" {
				t.Errorf("step %d: %s exit %d, stdout %q", i, r.Outcome, r.ExitCode, r.Stdout)
			}
		}
		if f := ws.files["a.txt"]; f.content != "A" || len(ws.files) != 1 {
			t.Errorf("workspace %v, want a.txt alone, with A", ws.files)
		}
		return resp
	}
	check := func(t *testing.T, resp *Response, ws *fakeWorkspace, replayed, stored int, ran ...string) {
		t.Helper()
		if want := (CacheSummary{Enabled: true, ReplayedSteps: replayed, StoredSteps: stored}); resp.Cache != want {
			t.Errorf("cache summary %+v, want %+v", resp.Cache, want)
		}
		if !slices.Equal(ws.ran, ran) {
			t.Errorf("ran %q, want %q", ws.ran, ran)
		}
		for i, sr := range resp.Results {
			if got := sr.Results[0].Replayed; got != (replayed > 0) {
				t.Errorf("step %d: replayed %v", i, got)
			}
		}
	}
	both := []string{"write a.txt A", "cat a.txt"}

	t.Run("miss, then store", func(t *testing.T) {
		ws := newFakeWorkspace()
		check(t, run(t, ws), ws, 0, 2, both...)
		if st := c.Stats(); st != (CacheStats{Misses: 2, Stores: 2}) {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("replay", func(t *testing.T) {
		ws := newFakeWorkspace()
		check(t, run(t, ws), ws, 2, 0)
		if ws.spent != 2 {
			t.Errorf("replayed output spent: %d bytes, want 2", ws.spent)
		}
		if st := c.Stats(); st != (CacheStats{Hits: 2, Misses: 2, Stores: 2}) {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("failed replay, then start over", func(t *testing.T) {
		ws := newFakeWorkspace()
		ws.failApply = 1
		check(t, run(t, ws), ws, 0, 2, both...)
		if ws.resets != 1 {
			t.Errorf("%d resets, want 1", ws.resets)
		}
		// The damaged layer counts as a miss and an error, and goes; the
		// second attempt looks nothing up and stores both steps again.
		if st := c.Stats(); st != (CacheStats{Hits: 2, Misses: 3, Stores: 4, Errors: 1}) {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("replay what the start-over stored", func(t *testing.T) {
		ws := newFakeWorkspace()
		check(t, run(t, ws), ws, 2, 0)
	})
}
