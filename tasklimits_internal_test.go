package svc

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// Per-task limits without a sandbox: the wire form, validation against
// the service's limits, the plan and the cache key.

func TestDecodeTaskLimits(t *testing.T) {
	task := func(limits string) string { return `{"steps":[{"cmd":"a","limits":` + limits + `}]}` }
	for _, tc := range []struct {
		name, body string
		want       TaskLimits
	}{
		{"empty", task(`{}`), TaskLimits{}},
		{"null", task(`null`), TaskLimits{}},
		{"a null field is the service's", task(`{"pids_max": null, "cpu_time_limit_ms": 300}`), TaskLimits{CPUTimeLimit: 300 * time.Millisecond}},
		{"every field", task(`{"wall_timeout_ms": 2000, "cpu_time_limit_ms": 1000, "memory_max_bytes": 67108864, "pids_max": 1, "output_limit_bytes": 65536}`),
			TaskLimits{WallTimeout: 2 * time.Second, CPUTimeLimit: time.Second, MemoryMax: 64 * MiB, PidsMax: 1, OutputLimit: 64 * KiB}},
		{"the largest duration", task(`{"wall_timeout_ms": 9223372036854}`), TaskLimits{WallTimeout: 9223372036854 * time.Millisecond}},
		{"the largest count", task(`{"memory_max_bytes": 9223372036854775807}`), TaskLimits{MemoryMax: 1<<63 - 1}},
	} {
		req, err := DecodeRequest(strings.NewReader(tc.body))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := req.Steps[0].Tasks[0].Limits; got != tc.want {
			t.Errorf("%s: limits %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestDecodeTaskLimitsErrors(t *testing.T) {
	task := func(limits string) string { return `{"steps":[{"cmd":"a","limits":` + limits + `}]}` }
	for _, tc := range []struct {
		name, body, want string
	}{
		{"array", task(`[]`), "steps[0].limits: expected an object of limits"},
		{"number", task(`5`), "steps[0].limits: expected an object of limits"},
		{"string", task(`"fast"`), "steps[0].limits: expected an object of limits"},
		{"unknown key", task(`{"cpu_max": 1}`), `steps[0].limits: unknown field "cpu_max"`},
		{"service-only key", task(`{"overall_timeout_ms": 1}`), `steps[0].limits: unknown field "overall_timeout_ms"`},
		{"duplicate", task(`{"pids_max": 1, "pids_max": 2}`), `steps[0].limits: duplicate field "pids_max"`},
		{"zero", task(`{"pids_max": 0}`), "steps[0].limits.pids_max: must be positive, got 0"},
		{"negative", task(`{"memory_max_bytes": -1}`), "steps[0].limits.memory_max_bytes: must be positive, got -1"},
		{"negative zero", task(`{"wall_timeout_ms": -0}`), "steps[0].limits.wall_timeout_ms: must be positive, got -0"},
		{"hugely negative", task(`{"pids_max": -99999999999999999999}`), "steps[0].limits.pids_max: must be positive, got -99999999999999999999"},
		{"fraction", task(`{"cpu_time_limit_ms": 1.5}`), "steps[0].limits.cpu_time_limit_ms: expected an integer literal (no fraction or exponent), got 1.5"},
		{"whole fraction", task(`{"cpu_time_limit_ms": 300.0}`), "steps[0].limits.cpu_time_limit_ms: expected an integer literal (no fraction or exponent), got 300.0"},
		{"exponent", task(`{"memory_max_bytes": 1e8}`), "steps[0].limits.memory_max_bytes: expected an integer literal (no fraction or exponent), got 1e8"},
		{"Exponent", task(`{"memory_max_bytes": 1E8}`), "got 1E8"},
		{"string number", task(`{"pids_max": "4"}`), "steps[0].limits.pids_max: expected a positive integer"},
		{"bool", task(`{"pids_max": true}`), "steps[0].limits.pids_max: expected a positive integer"},
		{"object", task(`{"pids_max": {}}`), "steps[0].limits.pids_max: expected a positive integer"},
		{"long literal", task(`{"pids_max": 0.` + strings.Repeat("1", 200) + `}`), "got 0.111"},
		{"in a parallel step", `{"steps":[[{"cmd":"a"},{"cmd":"b","limits":{"pids_max":0}}]]}`, "steps[0][1].limits.pids_max: must be positive, got 0"},
		{"legacy", `[{"cmd":"a","limits":{"pids_max":0}}]`, "steps[0].limits.pids_max: must be positive, got 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRequest(strings.NewReader(tc.body))
			wantInvalid(t, err, tc.want)
			if e := new(Error); errors.As(err, &e) && len(e.Msg) > 200 {
				t.Errorf("message of %d bytes: %q", len(e.Msg), e.Msg)
			}
		})
	}
}

// TestTaskLimitsBeyondInt64: a positive integer literal too large to hold
// is above the service's value like any other, 422 limits_exceeded naming
// the field and the service's value, not a malformed request.
func TestTaskLimitsBeyondInt64(t *testing.T) {
	task := func(limits string) string { return `{"steps":[{"cmd":"a","limits":` + limits + `}]}` }
	for _, tc := range []struct{ body, want string }{
		{task(`{"output_limit_bytes": 9223372036854775808}`), "steps[0].limits.output_limit_bytes: 9223372036854775807 exceeds the service's 1048576"},
		{task(`{"pids_max": 99999999999999999999999999}`), "steps[0].limits.pids_max: 9223372036854775807 exceeds the service's 64"},
		{task(`{"wall_timeout_ms": 9223372036855}`), "steps[0].limits.wall_timeout_ms: 9223372036854 exceeds the service's 10000"},
	} {
		req, err := DecodeRequest(strings.NewReader(tc.body))
		if err != nil {
			t.Errorf("%s: %v", tc.body, err)
			continue
		}
		err = req.Validate(DefaultLimits(), Profiles())
		if e := new(Error); !errors.As(err, &e) || e.Code != CodeLimitsExceeded || e.Msg != tc.want {
			t.Errorf("%s: %v, want limits_exceeded %q", tc.body, err, tc.want)
		}
	}
}

func TestValidateTaskLimits(t *testing.T) {
	svcLim := DefaultLimits() // 10 s wall, 5 s CPU, 256 MiB, 64 pids, 1 MiB output
	req := func(l TaskLimits) *Request {
		return &Request{Steps: []Step{Single(Task{Cmd: "true"}), Parallel(Task{Cmd: "true"}, Task{Cmd: "true", Limits: l})}}
	}
	for _, tc := range []struct {
		name string
		l    TaskLimits
		code Code
		msg  string
	}{
		{"wall", TaskLimits{WallTimeout: 11 * time.Second}, CodeLimitsExceeded,
			"steps[1][1].limits.wall_timeout_ms: 11000 exceeds the service's 10000"},
		{"cpu", TaskLimits{CPUTimeLimit: 5001 * time.Millisecond}, CodeLimitsExceeded,
			"steps[1][1].limits.cpu_time_limit_ms: 5001 exceeds the service's 5000"},
		{"memory", TaskLimits{MemoryMax: 512 * MiB}, CodeLimitsExceeded,
			"steps[1][1].limits.memory_max_bytes: 536870912 exceeds the service's 268435456"},
		{"pids", TaskLimits{PidsMax: 65}, CodeLimitsExceeded,
			"steps[1][1].limits.pids_max: 65 exceeds the service's 64"},
		{"output", TaskLimits{OutputLimit: MiB + 1}, CodeLimitsExceeded,
			"steps[1][1].limits.output_limit_bytes: 1048577 exceeds the service's 1048576"},
		{"the first field at fault", TaskLimits{CPUTimeLimit: time.Hour, MemoryMax: GiB}, CodeLimitsExceeded,
			"steps[1][1].limits.cpu_time_limit_ms: 3600000 exceeds the service's 5000"},
		{"negative count", TaskLimits{PidsMax: -1}, CodeInvalidRequest,
			"steps[1][1].limits.pids_max: must be positive, got -1"},
		{"negative duration", TaskLimits{WallTimeout: -time.Second}, CodeInvalidRequest,
			"steps[1][1].limits.wall_timeout_ms: must be positive, got -1s"},
		{"not whole milliseconds", TaskLimits{CPUTimeLimit: 1500 * time.Microsecond}, CodeInvalidRequest,
			"steps[1][1].limits.cpu_time_limit_ms: 1.5ms is not a whole number of milliseconds"},
		{"memory below 4 MiB", TaskLimits{MemoryMax: 4*MiB - 1}, CodeInvalidRequest,
			"steps[1][1].limits.memory_max_bytes: must be at least 4194304 (4 MiB), got 4194303"},
	} {
		err := req(tc.l).Validate(svcLim, Profiles())
		var e *Error
		if !errors.As(err, &e) || e.Code != tc.code || e.Msg != tc.msg {
			t.Errorf("%s: %v, want %s %q", tc.name, err, tc.code, tc.msg)
		}
	}
	// At the service's values, or below, and with zero limits taking the
	// defaults: valid.
	for _, l := range []TaskLimits{
		{},
		svcLim.taskLimits(),
		{WallTimeout: time.Millisecond, CPUTimeLimit: time.Millisecond, MemoryMax: 4 * MiB, PidsMax: 1, OutputLimit: 1},
	} {
		if err := req(l).Validate(svcLim, Profiles()); err != nil {
			t.Errorf("%+v: %v", l, err)
		}
		if err := req(l).Validate(Limits{}, Profiles()); err != nil {
			t.Errorf("%+v under the default limits: %v", l, err)
		}
	}
	// Only lower: a service with lower limits refuses what the default
	// allows.
	small := Limits{CPUTimeLimit: time.Second}
	err := req(TaskLimits{CPUTimeLimit: 2 * time.Second}).Validate(small, Profiles())
	if !errors.Is(err, ErrLimitsExceeded) || !strings.Contains(err.Error(), "2000 exceeds the service's 1000") {
		t.Errorf("under a 1 s CPU limit: %v", err)
	}
}

// The library's TaskLimits and the wire's are one: encoded, a Task has
// "limits" only when it lowers one, with the wire's names and units, and
// decodes to the same.
func TestTaskLimitsJSON(t *testing.T) {
	b, err := json.Marshal(Task{Cmd: "true"})
	if err != nil || strings.Contains(string(b), "limits") {
		t.Errorf("a task without limits: %s %v", b, err)
	}
	task := Task{Cmd: "./main", Limits: TaskLimits{CPUTimeLimit: 300 * time.Millisecond, MemoryMax: 64 * MiB}}
	b, err = json.Marshal(Request{Steps: []Step{Single(task)}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `"limits":{"cpu_time_limit_ms":300,"memory_max_bytes":67108864}`; !strings.Contains(string(b), want) {
		t.Errorf("encoded %s, want it to contain %s", b, want)
	}
	req, err := DecodeRequest(strings.NewReader(string(b)))
	if err != nil || req.Steps[0].Tasks[0].Limits != task.Limits {
		t.Errorf("decoded %+v %v, want %+v", req, err, task.Limits)
	}
	var back Task
	if err := json.Unmarshal(b[len(`{"steps":[`):len(b)-len(`],"cache":false,"stop_on_failure":false}`)], &back); err != nil || back.Limits != task.Limits {
		t.Errorf("json.Unmarshal: %+v %v", back.Limits, err)
	}
	if err := json.Unmarshal([]byte(`{"cmd":"a","limits":{"pids_max":1.5}}`), &back); err == nil || !strings.Contains(err.Error(), "limits.pids_max: expected an integer literal") {
		t.Errorf("json.Unmarshal of a fraction: %v", err)
	}
	if _, err := json.Marshal(TaskLimits{WallTimeout: 1500 * time.Microsecond}); err == nil {
		t.Error("a duration of 1.5 ms encoded")
	}
}

// taskLimitKeys returns the step keys of the request js, as a Sandbox
// with the golden configuration's limits makes them.
func taskLimitKeys(t *testing.T, js string) []string {
	t.Helper()
	req, err := DecodeRequest(strings.NewReader(js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	lim := goldenConfig().Limits
	if err := req.Validate(lim, Profiles()); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return chainKeys(goldenRoot, resolveSteps(req, goldenPolicy(ProfileCompileV2), lim)[:req.leadingCacheable()])
}

// TestStepKeysTaskLimits: the limits a task lowers are part of its key;
// limits equal to the Sandbox's are none, and a task without limits keeps
// the golden key it had before tasks had limits.
func TestStepKeysTaskLimits(t *testing.T) {
	const keyTrue = "baeb183516a860b5a268a53ce01af1a3336b1e4c05f7648aadac722b1be8f590" // TestStepKeysGolden's "profile default"
	key := func(limits string) string {
		return taskLimitKeys(t, `{"cache": true, "steps": [{"cmd": "true", "limits": `+limits+`}]}`)[0]
	}
	for _, same := range []string{`null`, `{}`, `{"cpu_time_limit_ms": 5000}`,
		`{"wall_timeout_ms": 10000, "cpu_time_limit_ms": 5000, "memory_max_bytes": 268435456, "pids_max": 64, "output_limit_bytes": 1048576}`} {
		if got := key(same); got != keyTrue {
			t.Errorf("limits %s: key %s, want the key of no limits %s", same, got, keyTrue)
		}
	}
	lowered := map[string]string{}
	for _, l := range []string{`{"cpu_time_limit_ms": 1000}`, `{"cpu_time_limit_ms": 2000}`, `{"wall_timeout_ms": 1000}`,
		`{"memory_max_bytes": 67108864}`, `{"pids_max": 1}`, `{"output_limit_bytes": 1}`,
		`{"cpu_time_limit_ms": 1000, "memory_max_bytes": 67108864}`} {
		k := key(l)
		if k == keyTrue {
			t.Errorf("limits %s: the key of no limits", l)
		}
		if prev, dup := lowered[k]; dup {
			t.Errorf("limits %s and %s: one key", l, prev)
		}
		lowered[k] = l
	}
	// A field equal to the Sandbox's beside a lowered one is none.
	if a, b := key(`{"cpu_time_limit_ms": 1000}`), key(`{"cpu_time_limit_ms": 1000, "pids_max": 64}`); a != b {
		t.Errorf("pids_max at the Sandbox's value changed the key: %s, %s", a, b)
	}
	// Pinned: the encoding of lowered limits is a stored format too (see
	// cache_golden_test.go).
	if got, want := key(`{"cpu_time_limit_ms": 1000, "memory_max_bytes": 67108864}`), "c2fc3596e808e5d407a73562c0b9a3a13bc1b17bd8dc06b1f8eff830356211cf"; got != want {
		t.Errorf("key %s, want %s: the cache format changed", got, want)
	}
	// The chain: a later step's key follows its predecessor's limits.
	a := taskLimitKeys(t, `{"cache": true, "steps": [{"cmd": "true", "limits": {"pids_max": 1}}, {"cmd": "true"}]}`)
	b := taskLimitKeys(t, `{"cache": true, "steps": [{"cmd": "true"}, {"cmd": "true"}]}`)
	if len(a) != 2 || len(b) != 2 || a[1] == b[1] || slices.Equal(a, b) {
		t.Errorf("keys %q and %q", a, b)
	}
}
