package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/svctest"
)

// TestTaskLimits: a task's "limits" through a real server: lowered
// limits bind the task; a raised one is 422 limits_exceeded naming the
// field and the service's value, a bad one 400 invalid_request naming the
// field, and neither runs anything.
func TestTaskLimits(t *testing.T) {
	s := newServer(t, svctest.Config{}) // the default limits: 256 MiB, 1 MiB of output
	task := func(limits string) string {
		return `{"steps": [{"cmd": "sh", "args": ["-c", "ulimit -s; yes"], "limits": ` + limits + `}]}`
	}

	var resp executeResponse
	decode(t, execute(s, task(`{"memory_max_bytes": 67108864, "output_limit_bytes": 100}`)), 200, &resp)
	var r struct {
		result
		StdoutTruncated bool `json:"stdout_truncated"`
	}
	if err := json.Unmarshal(resp.Results[0], &r); err != nil {
		t.Fatal(err)
	}
	if r.Outcome != "output_limit" || !r.StdoutTruncated || len(r.Stdout) != 100 || !strings.HasPrefix(r.Stdout, "65536\ny\n") {
		t.Errorf("lowered: %s truncated %v, %d bytes of stdout %q", r.Outcome, r.StdoutTruncated, len(r.Stdout), r.Stdout)
	}
	// {} and null change nothing.
	for _, none := range []string{`{}`, `null`} {
		// null is accepted as absent, which openapi.yaml leaves out.
		decode(t, doMalformed(t, s, "POST", "/execute", `{"steps": [{"cmd": "sh", "args": ["-c", "ulimit -s"], "limits": `+none+`}]}`), 200, &resp)
		if r := single(t, resp.Results[0]); r.Outcome != "exited" || r.Stdout != "262144\n" {
			t.Errorf("limits %s: %s %q", none, r.Outcome, r.Stdout)
		}
	}

	for _, tc := range []struct {
		limits string
		status int
		code   svc.Code
		msg    string
	}{
		{`{"memory_max_bytes": 536870912}`, 422, svc.CodeLimitsExceeded, "steps[0].limits.memory_max_bytes: 536870912 exceeds the service's 268435456"},
		{`{"cpu_time_limit_ms": 5001}`, 422, svc.CodeLimitsExceeded, "steps[0].limits.cpu_time_limit_ms: 5001 exceeds the service's 5000"},
		{`{"pids_max": 0}`, 400, svc.CodeInvalidRequest, "steps[0].limits.pids_max: must be positive, got 0"},
		{`{"pids_max": -3}`, 400, svc.CodeInvalidRequest, "steps[0].limits.pids_max: must be positive, got -3"},
		{`{"wall_timeout_ms": 1.5}`, 400, svc.CodeInvalidRequest, "steps[0].limits.wall_timeout_ms: expected an integer literal (no fraction or exponent), got 1.5"},
		{`{"wall_timeout_ms": 1e3}`, 400, svc.CodeInvalidRequest, "steps[0].limits.wall_timeout_ms: expected an integer literal (no fraction or exponent), got 1e3"},
		{`{"output_limit_bytes": "100"}`, 400, svc.CodeInvalidRequest, "steps[0].limits.output_limit_bytes: expected a positive integer"},
		{`{"memory": 1}`, 400, svc.CodeInvalidRequest, `steps[0].limits: unknown field "memory"`},
		{`{"memory_max_bytes": 1048576}`, 400, svc.CodeInvalidRequest, "steps[0].limits.memory_max_bytes: must be at least 4194304 (4 MiB), got 1048576"},
		{`[]`, 400, svc.CodeInvalidRequest, "steps[0].limits: expected an object of limits"},
	} {
		// Most break openapi.yaml on purpose.
		if e := expectError(t, doMalformed(t, s, "POST", "/execute", task(tc.limits)), tc.status, tc.code); e.Error != tc.msg {
			t.Errorf("limits %s: %q, want %q", tc.limits, e.Error, tc.msg)
		}
	}
	// The three tasks above, and none of a refused request.
	exited, cut := metric(t, s, `svc_tasks_total{outcome="exited"}`), metric(t, s, `svc_tasks_total{outcome="output_limit"}`)
	if exited != 2 || cut != 1 {
		t.Errorf("svc_tasks_total: %v exited, %v output_limit; want 2 and 1", exited, cut)
	}
}
