package svc

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestValidateStreamPaths: stdin_path, stdout_path and stderr_path are
// workspace-relative paths checked like files keys, and each rule that
// ties them to the other fields is invalid_request naming the field.
// A path under /tmp is absolute, so it is refused: the stream paths
// reach the workspace only.
func TestValidateStreamPaths(t *testing.T) {
	task := func(tk Task) *Request { tk.Cmd = "cat"; return one(tk) }
	for _, tc := range []struct {
		name string
		req  *Request
		msg  string // "" for valid
	}{
		{"stdin file", task(Task{StdinPath: "tests/1.in"}), ""},
		{"stdout file", task(Task{StdoutPath: "out/1"}), ""},
		{"both outputs in one file", task(Task{StdoutPath: "log", StderrPath: "./log"}), ""},
		{"all three", task(Task{StdinPath: "in", StdoutPath: "out", StderrPath: "err"}), ""},
		{"empty stdin with a path", task(Task{StdinPath: "in", Stdin: ""}), ""},

		{"dot dot", task(Task{StdinPath: "../etc/passwd"}), "steps[0].stdin_path: path escapes the workspace"},
		{"dot dot inside", task(Task{StdoutPath: "a/../../x"}), "steps[0].stdout_path: path escapes the workspace"},
		{"absolute", task(Task{StdinPath: "/etc/passwd"}), "steps[0].stdin_path: absolute path; files are relative to the workspace"},
		{"under /tmp", task(Task{StdoutPath: "/tmp/out"}), "steps[0].stdout_path: absolute path; files are relative to the workspace"},
		{"NUL", task(Task{StderrPath: "a\x00b"}), "steps[0].stderr_path: path contains a NUL byte"},
		{"the workspace", task(Task{StdinPath: "./"}), "steps[0].stdin_path: path names the workspace itself"},
		{"with stdin", task(Task{StdinPath: "in", Stdin: "x"}), "steps[0].stdin_path: not together with a non-empty stdin"},
		{"stdout is stdin", task(Task{StdinPath: "io", StdoutPath: "./io"}),
			"steps[0].stdout_path: same file as stdin_path; it would be truncated before the task reads it"},
		{"stderr is stdin", task(Task{StdinPath: "io", StderrPath: "io"}),
			"steps[0].stderr_path: same file as stdin_path; it would be truncated before the task reads it"},
		{"with stdin_from", &Request{Steps: []Step{Parallel(Task{Cmd: "a"}, Task{Cmd: "b", StdinPath: "in", StdinFrom: from(0)})}},
			"steps[0][1].stdin_from: not together with stdin_path"},
		{"feeding a task", &Request{Steps: []Step{Parallel(Task{Cmd: "a", StdoutPath: "out"}, Task{Cmd: "b", StdinFrom: from(0)})}},
			"steps[0][1].stdin_from: steps[0][0] writes its stdout to stdout_path; it cannot feed a task"},
		{"two tasks, one file", &Request{Steps: []Step{Parallel(Task{Cmd: "a", StdoutPath: "out"}, Task{Cmd: "b", StderrPath: "out"})}},
			"steps[0][1].stderr_path: steps[0][0] writes the same file; two tasks of a step cannot"},
		{"two steps, one file", &Request{Steps: []Step{Single(Task{Cmd: "a", StdoutPath: "out"}), Single(Task{Cmd: "b", StdoutPath: "out"})}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate(DefaultLimits(), Profiles())
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidRequest || e.Msg != tc.msg {
				t.Fatalf("Validate: %v, want invalid_request %q", err, tc.msg)
			}
		})
	}
	req := task(Task{StdinPath: "./a//in", StdoutPath: "b/./out", StderrPath: "b/out"})
	if err := req.Validate(DefaultLimits(), Profiles()); err != nil {
		t.Fatal(err)
	}
	if tk := req.Steps[0].Tasks[0]; tk.StdinPath != "a/in" || tk.StdoutPath != "b/out" || tk.StderrPath != "b/out" {
		t.Errorf("normalized to %q %q %q", tk.StdinPath, tk.StdoutPath, tk.StderrPath)
	}
}

// TestDecodeStreamPaths: the three fields are strings (null is absent)
// and encode back as they came.
func TestDecodeStreamPaths(t *testing.T) {
	const js = `{"steps":[{"cmd":"./sol","stdin_path":"t/1.in","stdout_path":"t/1.out","stderr_path":null}]}`
	req, err := DecodeRequest(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	tk := req.Steps[0].Tasks[0]
	if tk.StdinPath != "t/1.in" || tk.StdoutPath != "t/1.out" || tk.StderrPath != "" {
		t.Fatalf("decoded %+v", tk)
	}
	b, err := json.Marshal(req.Steps)
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"cmd":"./sol","stdin_path":"t/1.in","stdout_path":"t/1.out"}]`; string(b) != want {
		t.Errorf("encoded %s, want %s", b, want)
	}
	_, err = DecodeRequest(strings.NewReader(`{"steps":[{"cmd":"a","stdin_path":1}]}`))
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInvalidRequest || !strings.HasPrefix(e.Msg, "steps[0].stdin_path: ") {
		t.Errorf("a number: %v", err)
	}
}

// TestStepKeysStreamPaths: the stream paths are part of a step's key,
// after every other field and only when set, so a step without them
// keeps its key (TestStepKeysGolden); each path tells keys apart.
func TestStepKeysStreamPaths(t *testing.T) {
	keys := map[string]string{}
	for _, js := range []string{
		`{"cache": true, "steps": [{"cmd": "./sol"}]}`,
		`{"cache": true, "steps": [{"cmd": "./sol", "stdin_path": "1.in"}]}`,
		`{"cache": true, "steps": [{"cmd": "./sol", "stdin_path": "2.in"}]}`,
		`{"cache": true, "steps": [{"cmd": "./sol", "stdout_path": "1.in"}]}`,
		`{"cache": true, "steps": [{"cmd": "./sol", "stderr_path": "1.in"}]}`,
		`{"cache": true, "steps": [{"cmd": "./sol", "stdout_path": "o", "stderr_path": "o"}]}`,
	} {
		k := goldenKeys(t, js)
		if len(k) != 1 {
			t.Fatalf("%s: keys %q", js, k)
		}
		for prev, pk := range keys {
			if pk == k[0] {
				t.Errorf("%s and %s have the same key", prev, js)
			}
		}
		keys[js] = k[0]
	}
}
