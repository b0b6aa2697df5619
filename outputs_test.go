package svc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Collected outputs: decoding, validation and the JSON of a result's
// outputs, without a sandbox.

func TestDecodeOutputs(t *testing.T) {
	task := func(fields string) string { return `{"steps":[{"cmd":"a",` + fields + `}]}` }
	for _, tt := range []struct{ name, body, want string }{
		{"string", task(`"outputs":"out.txt"`), "steps[0].outputs: expected an array of strings"},
		{"object", task(`"outputs":{"out.txt":true}`), "steps[0].outputs: expected an array of strings"},
		{"number element", task(`"outputs":["a",1]`), "steps[0].outputs[1]: expected a string"},
		{"null element", task(`"outputs":[null]`), "steps[0].outputs[0]: expected a string"},
		{"array element", `{"steps":[{"cmd":"a"},[{"cmd":"b"},{"cmd":"c","outputs":["x",["y"]]}]]}`, "steps[1][1].outputs[1]: expected a string"},
		{"duplicate field", task(`"outputs":[],"outputs":[]`), `steps[0]: duplicate field "outputs"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeRequest(strings.NewReader(tt.body))
			wantInvalid(t, err, tt.want)
		})
	}
	for _, tt := range []struct {
		body string
		want []string
	}{
		{task(`"outputs":["out.txt","d/x"]`), []string{"out.txt", "d/x"}},
		{task(`"outputs":[]`), nil},
		{task(`"outputs":null`), nil},
	} {
		req, err := DecodeRequest(strings.NewReader(tt.body))
		if err != nil {
			t.Fatalf("%s: %v", tt.body, err)
		}
		if got := req.Steps[0].Tasks[0].Outputs; !slices.Equal(got, tt.want) {
			t.Errorf("%s: outputs %q, want %q", tt.body, got, tt.want)
		}
		roundTrip(t, req)
	}
}

func TestValidateOutputs(t *testing.T) {
	paths := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("out%d.txt", i)
		}
		return out
	}
	for _, tt := range []struct {
		name    string
		outputs []string
		msg     string
	}{
		{"33 paths", paths(33), "steps[0].outputs: 33 paths; at most 32 are allowed"},
		{"dot dot", []string{"a", "../etc/passwd"}, "steps[0].outputs[1]: path escapes the workspace"},
		{"dot dot inside", []string{"a/../b"}, "steps[0].outputs[0]: path escapes the workspace"},
		{"absolute", []string{"/etc/shadow"}, "steps[0].outputs[0]: absolute path; files are relative to the workspace"},
		{"empty", []string{""}, "steps[0].outputs[0]: empty path"},
		{"the workspace", []string{"./"}, "steps[0].outputs[0]: path names the workspace itself"},
		{"NUL", []string{"a\x00b"}, "steps[0].outputs[0]: path contains a NUL byte"},
		{"duplicate", []string{"a", "b", "a"}, "steps[0].outputs[2]: same path as steps[0].outputs[0]"},
		{"duplicate once normalized", []string{"d/x", "./d//x/"}, "steps[0].outputs[1]: same path as steps[0].outputs[0]"},
		{"long component", []string{strings.Repeat("x", 256)}, "steps[0].outputs[0]: path component longer than 255 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := one(Task{Cmd: "a", Outputs: tt.outputs}).Validate(DefaultLimits(), Profiles())
			wantInvalid(t, err, tt.msg)
		})
	}
	t.Run("in a parallel step", func(t *testing.T) {
		r := &Request{Steps: []Step{Single(Task{Cmd: "a"}), Parallel(Task{Cmd: "b"}, Task{Cmd: "c", Outputs: []string{"/x"}})}}
		wantInvalid(t, r.Validate(DefaultLimits(), Profiles()), "steps[1][1].outputs[0]: absolute path")
	})

	t.Run("32 paths", func(t *testing.T) {
		if err := one(Task{Cmd: "a", Outputs: paths(32)}).Validate(DefaultLimits(), Profiles()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("normalized in a new slice", func(t *testing.T) {
		caller := []string{"./out.txt", "d//x/", "plain"}
		r := one(Task{Cmd: "a", Outputs: caller})
		if err := r.Validate(DefaultLimits(), Profiles()); err != nil {
			t.Fatal(err)
		}
		if got, want := r.Steps[0].Tasks[0].Outputs, []string{"out.txt", "d/x", "plain"}; !slices.Equal(got, want) {
			t.Errorf("outputs %q, want %q", got, want)
		}
		if want := []string{"./out.txt", "d//x/", "plain"}; !slices.Equal(caller, want) {
			t.Errorf("the caller's slice was modified: %q", caller)
		}
		clean := []string{"a", "b/c"}
		r = one(Task{Cmd: "a", Outputs: clean})
		if err := r.Validate(DefaultLimits(), Profiles()); err != nil {
			t.Fatal(err)
		}
		if &r.Steps[0].Tasks[0].Outputs[0] != &clean[0] {
			t.Error("paths in normal form got a new slice")
		}
	})
}

func TestOutputsJSON(t *testing.T) {
	id := testFileID
	r := Result{Outcome: OutcomeExited, Outputs: map[string]OutputFile{
		"out.txt":     {FileID: id, Size: 12},
		"empty":       {FileID: id, Size: 0},
		"missing.txt": {Error: OutputNotFound},
		"d":           {Error: OutputNotRegular},
	}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `"outputs":{"d":{"error":"not_regular"},"empty":{"file_id":"` + id + `","size":0},` +
		`"missing.txt":{"error":"not_found"},"out.txt":{"file_id":"` + id + `","size":12}}`
	if !strings.Contains(string(b), want) {
		t.Errorf("result JSON %s\nwant it to contain %s", b, want)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, r)
	}

	// No outputs: no field, in either shape; a not-run result never has one.
	for _, r := range []Result{
		{Outcome: OutcomeExited},
		{Outcome: OutcomeExited, Outputs: map[string]OutputFile{}},
		{Outcome: OutcomeNotStarted, Error: "skipped", Outputs: map[string]OutputFile{"a": {Error: OutputNotFound}}},
	} {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "outputs") {
			t.Errorf("%+v encodes as %s", r, b)
		}
	}
}

// TestStepKeysOutputs: outputs are part of a step's key when a task has
// some, whatever their order or spelling; a task without outputs keeps
// the key it had before outputs existed (TestStepKeysGolden), and so does
// one with an empty list.
func TestStepKeysOutputs(t *testing.T) {
	const echo = `{"cmd": "echo", "args": ["hi"]`
	keys := func(outputs string) []string {
		return goldenKeys(t, `{"cache": true, "steps": [`+echo+outputs+`}]}`)
	}
	if got := keys(""); !slices.Equal(got, []string{keyEcho}) {
		t.Fatalf("no outputs: %q, want the golden %s", got, keyEcho)
	}
	if got := keys(`, "outputs": []`); !slices.Equal(got, []string{keyEcho}) {
		t.Errorf("empty outputs: %q, want the golden %s", got, keyEcho)
	}
	// Pinned like the golden keys: changing it is a cache format change.
	const keyEchoOut = "37fae4ec33bf64deb997711015d2e2cec5f1a13210234bc47dc5b9862d83300b"
	with := keys(`, "outputs": ["out.txt", "d/x"]`)
	if slices.Equal(with, []string{keyEcho}) {
		t.Fatal("outputs do not change the key")
	}
	if !slices.Equal(with, []string{keyEchoOut}) {
		t.Errorf("outputs out.txt and d/x: key %q, want %s", with, keyEchoOut)
	}
	for _, o := range []string{`, "outputs": ["d/x", "out.txt"]`, `, "outputs": ["./out.txt", "d//x/"]`} {
		if got := keys(o); !slices.Equal(got, with) {
			t.Errorf("%s: key %q, want %q", o, got, with)
		}
	}
	if got := keys(`, "outputs": ["out.txt"]`); slices.Equal(got, with) {
		t.Error("one output less has the same key")
	}
}

// hugeWorkspace is a fake workspace whose output "huge" is a file of 100
// GiB that must never be read.
type hugeWorkspace struct {
	*fakeWorkspace
	t *testing.T
}

func (w hugeWorkspace) openOutput(p string) (outputReader, int64, error) {
	if p == "huge" {
		return failReader{w.t}, 100 * GiB, nil
	}
	return w.fakeWorkspace.openOutput(p)
}

type failReader struct{ t *testing.T }

func (r failReader) ReadAt([]byte, int64) (int, error) {
	r.t.Error("a file over the limit was read")
	return 0, io.EOF
}

func (failReader) Close() error { return nil }

// TestCollectOutputsBySize: a file over the limit is too_large by its
// size, without a byte read; the limit is the smaller of the Sandbox's
// and the file store's.
func TestCollectOutputsBySize(t *testing.T) {
	files, err := OpenFileStore(FileStoreConfig{Dir: t.TempDir(), MaxUploadBytes: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	cfg, err := Config{Files: files, Limits: Limits{UploadFileLimit: 20}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	s := &Sandbox{cfg: cfg, limits: cfg.Limits, log: cfg.Logger}
	ws := hugeWorkspace{newFakeWorkspace(), t}
	ws.write("ten", "0123456789")
	ws.write("eleven", "0123456789a")
	step := &stepPlan{tasks: []taskPlan{{Task: &Task{Cmd: "x", Outputs: []string{"huge", "ten", "eleven", "none"}}}}}
	sr := StepResult{Results: []Result{{Outcome: OutcomeExited}}}
	if err := s.collectOutputs(context.Background(), ws, step, &sr, s.newOutputBudget()); err != nil {
		t.Fatal(err)
	}
	want := map[string]OutputFile{
		"huge":   {Error: OutputTooLarge},
		"ten":    {FileID: sha256Hex("0123456789"), Size: 10},
		"eleven": {Error: OutputTooLarge},
		"none":   {Error: OutputNotFound},
	}
	if got := sr.Results[0].Outputs; !reflect.DeepEqual(got, want) {
		t.Errorf("outputs %v, want %v", got, want)
	}
}

// TestCollectOutputsBudget: the outputs of a request take their sizes
// from one budget, step after step, in the order they are collected; one
// it has no room for is store_full, unread, and a smaller one after it
// may still fit.
func TestCollectOutputsBudget(t *testing.T) {
	files, err := OpenFileStore(FileStoreConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	cfg, err := Config{Files: files}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	s := &Sandbox{cfg: cfg, limits: cfg.Limits, log: cfg.Logger}
	ws := hugeWorkspace{newFakeWorkspace(), t}
	for name, content := range map[string]string{"a": "aaaaaaaaaa", "b": "bbbbbbbbbb", "c": "cccccccccc", "d": "ddddd", "e": ""} {
		ws.write(name, content)
	}
	budget := &outputBudget{left: 25}
	collect := func(outputs ...string) map[string]OutputFile {
		step := &stepPlan{tasks: []taskPlan{{Task: &Task{Cmd: "x", Outputs: outputs}}}}
		sr := StepResult{Results: []Result{{Outcome: OutcomeExited}}}
		if err := s.collectOutputs(context.Background(), ws, step, &sr, budget); err != nil {
			t.Fatal(err)
		}
		return sr.Results[0].Outputs
	}
	got := collect("a", "b")
	want := map[string]OutputFile{
		"a": {FileID: sha256Hex("aaaaaaaaaa"), Size: 10},
		"b": {FileID: sha256Hex("bbbbbbbbbb"), Size: 10},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("first step: outputs %v, want %v", got, want)
	}
	// 5 bytes left: c (10) does not fit, d (5) does, and then only e (0).
	got = collect("c", "huge", "d", "a", "e")
	want = map[string]OutputFile{
		"c":    {Error: OutputStoreFull},
		"huge": {Error: OutputTooLarge},
		"d":    {FileID: sha256Hex("ddddd"), Size: 5},
		"a":    {Error: OutputStoreFull},
		"e":    {FileID: sha256Hex(""), Size: 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("second step: outputs %v, want %v", got, want)
	}
	if n, _ := files.Usage(); n != 4 {
		t.Errorf("%d files stored, want 4", n)
	}
}

// TestCacheWalkOutputs: a step with outputs is stored with a layer that
// holds nothing of them (its results have no outputs: what the store
// said is not the layer's to keep), and its replay reads them again from
// the workspace the layer leaves, storing them where the store lacks
// them.
func TestCacheWalkOutputs(t *testing.T) {
	c := testCache(t, CacheConfig{})
	files, err := OpenFileStore(FileStoreConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	cfg, err := Config{Cache: c, Files: files}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	s := &Sandbox{cfg: cfg, limits: cfg.Limits, log: cfg.Logger}
	s.closing, s.close = context.WithCancelCause(context.Background())
	ctx := context.Background()
	run := func(ws *fakeWorkspace) (*Response, *plan) {
		t.Helper()
		req := &Request{Cache: true, Steps: []Step{
			Single(Task{Cmd: "write", Args: []string{"a.txt", "A"}, Outputs: []string{"a.txt", "b.txt"}}),
		}}
		p, err := s.plan(req)
		if err != nil {
			t.Fatal(err)
		}
		defer p.close()
		ex, err := s.execute(ctx, ws, p, time.Now().Add(time.Minute))
		resp, err := s.answer(ctx, ctx, req, ex, err)
		if err != nil {
			t.Fatal(err)
		}
		return resp, p
	}
	want := map[string]OutputFile{"a.txt": {FileID: sha256Hex("A"), Size: 1}, "b.txt": {Error: OutputNotFound}}

	resp, p := run(newFakeWorkspace())
	if got := resp.Results[0].Results[0].Outputs; resp.Cache.StoredSteps != 1 || !reflect.DeepEqual(got, want) {
		t.Fatalf("run: %+v, outputs %v", resp.Cache, got)
	}
	l, blob := c.lookup(ctx, p.keys[0], 1)
	if l == nil {
		t.Fatal("no layer")
	}
	blob.Close()
	if l.results[0].Outputs != nil {
		t.Errorf("the layer's results hold outputs: %v", l.results[0].Outputs)
	}

	if err := files.Delete(sha256Hex("A")); err != nil {
		t.Fatal(err)
	}
	ws := newFakeWorkspace()
	resp, _ = run(ws)
	if got := resp.Results[0].Results[0].Outputs; resp.Cache.ReplayedSteps != 1 || len(ws.ran) != 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("replay: %+v, ran %q, outputs %v", resp.Cache, ws.ran, got)
	}
	if _, err := files.Stat(sha256Hex("A")); err != nil {
		t.Errorf("the replay did not store the output again: %v", err)
	}
}
