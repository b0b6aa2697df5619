package svc

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// one returns a request of one step with task t.
func one(t Task) *Request { return &Request{Steps: []Step{Single(t)}} }

// withFiles returns a request of one task with the given files.
func withFiles(files map[string]File) *Request { return one(Task{Cmd: "a", Files: files}) }

func inline(paths ...string) map[string]File {
	m := make(map[string]File)
	for _, p := range paths {
		m[p] = File{Content: "x"}
	}
	return m
}

func tasks(n int) []Task {
	ts := make([]Task, n)
	for i := range ts {
		ts[i] = Task{Cmd: "a"}
	}
	return ts
}

func TestValidateErrors(t *testing.T) {
	defaultAllowed := []Profile{ProfileCompileV2, ProfileNativeV2}
	lim := DefaultLimits()
	tests := []struct {
		name    string
		req     *Request
		lim     *Limits // nil: lim
		allowed []Profile
		code    Code
		msg     string
	}{
		// Steps.
		{name: "nil request", req: nil, code: CodeInvalidRequest, msg: "steps: empty"},
		{name: "no steps", req: &Request{}, code: CodeInvalidRequest, msg: "steps: empty"},
		{name: "empty steps", req: &Request{Steps: []Step{}}, code: CodeInvalidRequest, msg: "steps: empty"},
		{name: "empty parallel step", req: &Request{Steps: []Step{Single(Task{Cmd: "a"}), Parallel()}},
			code: CodeInvalidRequest, msg: "steps[1]: empty parallel step"},
		{name: "empty single step", req: &Request{Steps: []Step{{}}}, code: CodeInvalidRequest, msg: "steps[0]: step has no task"},
		{name: "too many steps", req: &Request{Steps: make([]Step, lim.MaxSteps+1)},
			code: CodeLimitsExceeded, msg: "steps: 33 steps; at most 32 are allowed"},
		{name: "too many steps custom", req: &Request{Steps: []Step{Single(Task{Cmd: "a"}), Single(Task{Cmd: "a"})}},
			lim: &Limits{MaxSteps: 1}, code: CodeLimitsExceeded, msg: "steps: 2 steps; at most 1 are allowed"},
		{name: "too wide", req: &Request{Steps: []Step{Single(Task{Cmd: "a"}), Parallel(tasks(lim.MaxParallelTasks + 1)...)}},
			code: CodeLimitsExceeded, msg: "steps[1]: 9 parallel tasks; at most 8 are allowed"},
		{name: "too wide custom", req: &Request{Steps: []Step{Parallel(tasks(3)...)}},
			lim: &Limits{MaxParallelTasks: 2}, code: CodeLimitsExceeded, msg: "steps[0]: 3 parallel tasks"},
		{name: "hand-built multi-task step is an array", req: &Request{Steps: []Step{{Tasks: []Task{{Cmd: "a"}, {}}}}},
			code: CodeInvalidRequest, msg: "steps[0][1].cmd: empty"},
		{name: "first problem wins", req: &Request{Steps: []Step{Single(Task{}), Parallel(tasks(9)...)}},
			code: CodeInvalidRequest, msg: "steps[0].cmd: empty"},

		// cmd, args.
		{name: "cmd empty", req: one(Task{}), code: CodeInvalidRequest, msg: "steps[0].cmd: empty"},
		{name: "cmd empty in parallel", req: &Request{Steps: []Step{Single(Task{Cmd: "a"}), Single(Task{Cmd: "b"}), Parallel(Task{})}},
			code: CodeInvalidRequest, msg: "steps[2][0].cmd: empty"},
		{name: "cmd NUL", req: one(Task{Cmd: "a\x00b"}), code: CodeInvalidRequest, msg: "steps[0].cmd: contains a NUL byte"},
		{name: "args NUL", req: one(Task{Cmd: "a", Args: []string{"x", "\x00"}}), code: CodeInvalidRequest, msg: "steps[0].args[1]: contains a NUL byte"},

		// env.
		{name: "env name empty", req: one(Task{Cmd: "a", Env: map[string]string{"": "x"}}),
			code: CodeInvalidRequest, msg: `steps[0].env[""]: invalid name`},
		{name: "env name digit first", req: one(Task{Cmd: "a", Env: map[string]string{"1A": "x"}}),
			code: CodeInvalidRequest, msg: `steps[0].env["1A"]: invalid name; names match [A-Za-z_][A-Za-z0-9_]*`},
		{name: "env name equals", req: one(Task{Cmd: "a", Env: map[string]string{"A=B": "x"}}),
			code: CodeInvalidRequest, msg: `steps[0].env["A=B"]: invalid name`},
		{name: "env name dash", req: one(Task{Cmd: "a", Env: map[string]string{"A-B": "x"}}),
			code: CodeInvalidRequest, msg: `steps[0].env["A-B"]: invalid name`},
		{name: "env name unicode", req: one(Task{Cmd: "a", Env: map[string]string{"É": "x"}}),
			code: CodeInvalidRequest, msg: `steps[0].env["É"]: invalid name`},
		{name: "env name NUL", req: one(Task{Cmd: "a", Env: map[string]string{"A\x00": "x"}}),
			code: CodeInvalidRequest, msg: `steps[0].env["A\x00"]: invalid name`},
		{name: "env value NUL", req: one(Task{Cmd: "a", Env: map[string]string{"A": "x\x00"}}),
			code: CodeInvalidRequest, msg: `steps[0].env["A"]: value contains a NUL byte`},
		{name: "env first key in order", req: one(Task{Cmd: "a", Env: map[string]string{"b-": "", "a-": ""}}),
			code: CodeInvalidRequest, msg: `steps[0].env["a-"]: invalid name`},

		// files.
		{name: "file path empty", req: withFiles(inline("")), code: CodeInvalidRequest, msg: `steps[0].files[""]: empty path`},
		{name: "file path absolute", req: withFiles(inline("/etc/passwd")), code: CodeInvalidRequest,
			msg: `steps[0].files["/etc/passwd"]: absolute path`},
		{name: "file path NUL", req: withFiles(inline("a\x00b")), code: CodeInvalidRequest,
			msg: `steps[0].files["a\x00b"]: path contains a NUL byte`},
		{name: "file path dotdot", req: withFiles(inline("../x")), code: CodeInvalidRequest,
			msg: `steps[0].files["../x"]: path escapes the workspace`},
		{name: "file path dotdot only", req: withFiles(inline("..")), code: CodeInvalidRequest,
			msg: `steps[0].files[".."]: path escapes the workspace`},
		{name: "file path inner dotdot", req: withFiles(inline("a/../b")), code: CodeInvalidRequest,
			msg: `steps[0].files["a/../b"]: path escapes the workspace`},
		{name: "file path trailing dotdot", req: withFiles(inline("a/b/..")), code: CodeInvalidRequest,
			msg: `steps[0].files["a/b/.."]: path escapes the workspace`},
		{name: "file path dot", req: withFiles(inline(".")), code: CodeInvalidRequest,
			msg: `steps[0].files["."]: path names the workspace itself`},
		{name: "file path dot slash", req: withFiles(inline("./")), code: CodeInvalidRequest,
			msg: `steps[0].files["./"]: path names the workspace itself`},
		{name: "file path dots", req: withFiles(inline("./././")), code: CodeInvalidRequest,
			msg: `steps[0].files["./././"]: path names the workspace itself`},
		{name: "file path component too long", req: withFiles(inline("d/" + strings.Repeat("x", 256))), code: CodeInvalidRequest,
			msg: `: path component longer than 255 bytes`},
		{name: "file path too long", req: withFiles(inline(strings.Repeat("d/", 2048) + "x")), code: CodeInvalidRequest,
			msg: `: path longer than 4096 bytes`},
		{name: "file paths collide", req: withFiles(inline("a/b", "a//b")), code: CodeInvalidRequest,
			msg: `steps[0].files["a/b"]: same path as "a//b"`},
		{name: "file paths collide dot", req: withFiles(inline("x", "./x")), code: CodeInvalidRequest,
			msg: `steps[0].files["x"]: same path as "./x"`},
		{name: "file is a directory of another", req: withFiles(inline("a", "a/b")), code: CodeInvalidRequest,
			msg: `steps[0].files["a/b"]: "a" is a file, not a directory`},
		{name: "file is a deep directory of another", req: withFiles(inline("a/b", "a-c", "a/b/c/d", "a.c")), code: CodeInvalidRequest,
			msg: `steps[0].files["a/b/c/d"]: "a/b" is a file, not a directory`},
		{name: "file is a directory, unnormalized", req: withFiles(inline("./a/", "a//b")), code: CodeInvalidRequest,
			msg: `steps[0].files["a//b"]: "./a/" is a file, not a directory`},
		{name: "file_id short", req: withFiles(map[string]File{"a": {FileID: "abc"}}), code: CodeInvalidRequest,
			msg: `steps[0].files["a"].file_id: expected 64 lowercase hex characters`},
		{name: "file_id upper", req: withFiles(map[string]File{"a": {FileID: strings.ToUpper(testFileID)}}), code: CodeInvalidRequest,
			msg: `steps[0].files["a"].file_id: expected 64 lowercase hex characters`},
		{name: "file_id not hex", req: withFiles(map[string]File{"a": {FileID: strings.Repeat("g", 64)}}), code: CodeInvalidRequest,
			msg: `steps[0].files["a"].file_id: expected 64 lowercase hex characters`},
		{name: "file_id long", req: withFiles(map[string]File{"a": {FileID: testFileID + "0"}}), code: CodeInvalidRequest,
			msg: `steps[0].files["a"].file_id: expected 64 lowercase hex characters`},
		{name: "files in parallel step", req: &Request{Steps: []Step{Single(Task{Cmd: "a"}), Single(Task{Cmd: "a"}),
			Parallel(Task{Cmd: "a", Files: inline("../x")})}}, code: CodeInvalidRequest,
			msg: `steps[2][0].files["../x"]: path escapes the workspace`},

		// working_dir.
		{name: "working_dir relative", req: one(Task{Cmd: "a", WorkingDir: "svc"}), code: CodeInvalidRequest,
			msg: "steps[0].working_dir: must be an absolute path"},
		{name: "working_dir dot", req: one(Task{Cmd: "a", WorkingDir: "./"}), code: CodeInvalidRequest,
			msg: "steps[0].working_dir: must be an absolute path"},
		{name: "working_dir NUL", req: one(Task{Cmd: "a", WorkingDir: "/svc\x00"}), code: CodeInvalidRequest,
			msg: "steps[0].working_dir: contains a NUL byte"},

		// sandbox_profile.
		{name: "profile unknown", req: one(Task{Cmd: "a", SandboxProfile: "x"}), code: CodeInvalidRequest,
			msg: `steps[0].sandbox_profile: unknown profile "x"; known: compile_v2, native_v2, compile_v1, native_v1`},
		{name: "profile case", req: one(Task{Cmd: "a", SandboxProfile: "Compile_v2"}), code: CodeInvalidRequest,
			msg: `steps[0].sandbox_profile: unknown profile "Compile_v2"`},
		{name: "profile unknown even if listed", req: one(Task{Cmd: "a", SandboxProfile: "x"}), allowed: []Profile{"x"},
			code: CodeInvalidRequest, msg: `steps[0].sandbox_profile: unknown profile "x"`},
		{name: "profile not allowed", req: one(Task{Cmd: "a", SandboxProfile: ProfileCompileV1}), code: CodeProfileNotAllowed,
			msg: `steps[0].sandbox_profile: profile "compile_v1" is not allowed; allowed: compile_v2, native_v2`},
		{name: "profile not allowed in parallel", req: &Request{Steps: []Step{Parallel(Task{Cmd: "a"}, Task{Cmd: "a", SandboxProfile: ProfileNativeV1})}},
			code: CodeProfileNotAllowed, msg: `steps[0][1].sandbox_profile: profile "native_v1" is not allowed`},
		{name: "profile none allowed", req: one(Task{Cmd: "a", SandboxProfile: ProfileNativeV2}), allowed: []Profile{},
			code: CodeProfileNotAllowed, msg: `allowed: none`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := lim
			if tt.lim != nil {
				l = *tt.lim
			}
			allowed := tt.allowed
			if allowed == nil {
				allowed = defaultAllowed
			}
			err := tt.req.Validate(l, allowed)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Validate = %v (%T), want *Error", err, err)
			}
			if e.Code != tt.code {
				t.Errorf("code = %q, want %q (msg %q)", e.Code, tt.code, e.Msg)
			}
			if !strings.Contains(e.Msg, tt.msg) {
				t.Errorf("msg = %q, want it to contain %q", e.Msg, tt.msg)
			}
			if !errors.Is(err, &Error{Code: tt.code}) {
				t.Errorf("errors.Is(err, code %q) is false", tt.code)
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	all := Profiles()
	tests := []struct {
		name string
		req  *Request
	}{
		{"minimal", one(Task{Cmd: "true"})},
		{"max steps", &Request{Steps: func() []Step {
			s := make([]Step, 32)
			for i := range s {
				s[i] = Single(Task{Cmd: "a"})
			}
			return s
		}()}},
		{"max width", &Request{Steps: []Step{Parallel(tasks(8)...)}}},
		{"parallel of one", &Request{Steps: []Step{Parallel(Task{Cmd: "a"})}}},
		{"every profile", &Request{Steps: []Step{Parallel(
			Task{Cmd: "a", SandboxProfile: ProfileCompileV2}, Task{Cmd: "a", SandboxProfile: ProfileNativeV2},
			Task{Cmd: "a", SandboxProfile: ProfileCompileV1}, Task{Cmd: "a", SandboxProfile: ProfileNativeV1},
			Task{Cmd: "a"})}}},
		{"utf-8 everywhere", one(Task{
			Cmd:   "/opt/bin/计算",
			Args:  []string{"ü", "😀", "\u2028", ""},
			Env:   map[string]string{"_": "é", "A_1": "日本語", "lower": "\t\n"},
			Stdin: "any \x01 bytes \x00 even NUL",
			Files: map[string]File{
				"dir/файл.txt":                  {Content: "données"},
				"😀/" + strings.Repeat("é", 127): {Content: ""},
				"b":                             {FileID: testFileID},
				"...":                           {},
				".hidden/..x/x..":               {},
			},
			WorkingDir: "/svc/каталог",
		})},
		{"long but legal paths", withFiles(inline(
			strings.Repeat("x", 255),
			strings.Repeat(strings.Repeat("d", 254)+"/", 16)+strings.Repeat("f", 4096-255*16),
		))},
		{"siblings are not directories", withFiles(inline("a", "a.b", "a-b/c", "ab/c", "b/a", "b/ab"))},
		{"env names", one(Task{Cmd: "a", Env: map[string]string{"_": "", "a": "", "Z9": "", "__x__": "", "PATH": "/x"}})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.req.Validate(DefaultLimits(), all); err != nil {
				t.Fatalf("Validate: %v", err)
			}
		})
	}
}

func TestValidateZeroLimitsTakeDefaults(t *testing.T) {
	r := &Request{Steps: []Step{Parallel(tasks(8)...)}}
	for range 31 {
		r.Steps = append(r.Steps, Single(Task{Cmd: "a"}))
	}
	if err := r.Validate(Limits{}, Profiles()); err != nil {
		t.Fatalf("Validate with zero Limits: %v", err)
	}
	r.Steps = append(r.Steps, Single(Task{Cmd: "a"}))
	if err := r.Validate(Limits{}, Profiles()); CodeOf(err) != CodeLimitsExceeded {
		t.Fatalf("Validate with zero Limits and 33 steps: %v, want limits_exceeded", err)
	}
}

func TestValidateNormalizes(t *testing.T) {
	callerFiles := map[string]File{
		"a//b":    {Content: "1"},
		"./c":     {Content: "2"},
		"d/":      {FileID: testFileID},
		"e/./f/":  {Content: "3"},
		"plain":   {Content: "4"},
		"x/y.txt": {Content: "5"},
	}
	saved := maps.Clone(callerFiles)
	r := &Request{Steps: []Step{
		Single(Task{Cmd: "a", Files: callerFiles, WorkingDir: "/svc//src/./x/../"}),
		Parallel(Task{Cmd: "b", Files: inline("ok", "dir/ok"), WorkingDir: "/"}, Task{Cmd: "c", WorkingDir: "/tmp/"}),
	}}
	if err := r.Validate(DefaultLimits(), Profiles()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	want := map[string]File{
		"a/b":     {Content: "1"},
		"c":       {Content: "2"},
		"d":       {FileID: testFileID},
		"e/f":     {Content: "3"},
		"plain":   {Content: "4"},
		"x/y.txt": {Content: "5"},
	}
	if got := r.Steps[0].Tasks[0].Files; !reflect.DeepEqual(got, want) {
		t.Errorf("files = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(callerFiles, saved) {
		t.Errorf("the caller's map was modified: %v", callerFiles)
	}
	for _, c := range []struct {
		got, want string
	}{
		{r.Steps[0].Tasks[0].WorkingDir, "/svc/src"},
		{r.Steps[1].Tasks[0].WorkingDir, "/"},
		{r.Steps[1].Tasks[1].WorkingDir, "/tmp"},
	} {
		if c.got != c.want {
			t.Errorf("working_dir = %q, want %q", c.got, c.want)
		}
	}
	// Files already in normal form keep their map.
	if got := r.Steps[1].Tasks[0].Files; !reflect.DeepEqual(got, inline("ok", "dir/ok")) {
		t.Errorf("normal files = %v", got)
	}

	// Validating again is a no-op.
	before := cloneRequest(r)
	if err := r.Validate(DefaultLimits(), Profiles()); err != nil {
		t.Fatalf("second Validate: %v", err)
	}
	if !reflect.DeepEqual(r, before) {
		t.Errorf("second Validate changed the request")
	}
	roundTrip(t, r)
}

// cloneRequest returns a deep copy of r.
func cloneRequest(r *Request) *Request {
	c := *r
	c.Steps = make([]Step, len(r.Steps))
	for i, s := range r.Steps {
		c.Steps[i] = Step{Parallel: s.Parallel, Tasks: make([]Task, len(s.Tasks))}
		for j, t := range s.Tasks {
			t.Args = slices.Clone(t.Args)
			t.Env = maps.Clone(t.Env)
			t.Files = maps.Clone(t.Files)
			if t.Cache != nil {
				t.Cache = boolPtr(*t.Cache)
			}
			c.Steps[i].Tasks[j] = t
		}
	}
	return &c
}

func TestValidateDecoded(t *testing.T) {
	// The example of the brief: the message names the field of the JSON body.
	body := `{"steps":[{"cmd":"a"},{"cmd":"b"},[{"cmd":"c","files":{"../x":"y"}}]]}`
	r, err := DecodeRequest(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	err = r.Validate(DefaultLimits(), Profiles())
	if e, ok := err.(*Error); !ok || e.Code != CodeInvalidRequest || e.Msg != `steps[2][0].files["../x"]: path escapes the workspace` {
		t.Errorf("Validate = %#v", err)
	}
}
