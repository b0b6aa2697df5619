package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/svctest"
)

// TestStdinFrom: a piped step over HTTP, and every invalid form of
// stdin_from answered 400 invalid_request naming the field, with nothing
// run.
func TestStdinFrom(t *testing.T) {
	s := newServer(t, svctest.Config{})
	// A counter and an echo: the counter asks for each number's echo.
	const ok = `{"steps": [[
	  {"cmd": "sh", "args": ["-c", "for i in 1 2 3; do echo $i; read x; [ $x = $i ] || exit 1; done"], "stdin_from": 1},
	  {"cmd": "cat", "stdin_from": 0, "sandbox_profile": "native_v2"}
	]]}`
	var resp executeResponse
	decode(t, execute(s, ok), 200, &resp)
	var rs []result
	if err := json.Unmarshal(resp.Results[0], &rs); err != nil || len(rs) != 2 {
		t.Fatalf("%v: %s", err, resp.Results[0])
	}
	for i, r := range rs {
		if r.Outcome != "exited" || r.ExitCode != 0 || r.Stdout != "1\n2\n3\n" {
			t.Errorf("results[0][%d]: %+v", i, r)
		}
	}
	ran := metric(t, s, "svc_task_duration_seconds_count")

	for _, tc := range []struct {
		name, body, msg string
		malformed       bool // breaks openapi.yaml, not only the rules
	}{
		{"single step", `{"steps": [{"cmd": "cat", "stdin_from": 0}]}`, "steps[0].stdin_from: only in a parallel step", false},
		{"with stdin", `{"steps": [[{"cmd": "echo"}, {"cmd": "cat", "stdin": "x", "stdin_from": 0}]]}`,
			"steps[0][1].stdin_from: not together with a non-empty stdin", false},
		{"out of range", `{"steps": [[{"cmd": "echo"}, {"cmd": "cat", "stdin_from": 2}]]}`,
			"steps[0][1].stdin_from: 2 is not a task of the step (0 to 1)", false},
		{"negative", `{"steps": [[{"cmd": "echo"}, {"cmd": "cat", "stdin_from": -1}]]}`,
			"steps[0][1].stdin_from: -1 is not a task of the step (0 to 1)", true},
		{"self", `{"steps": [[{"cmd": "echo"}, {"cmd": "cat", "stdin_from": 1}]]}`,
			"steps[0][1].stdin_from: a task cannot feed itself", false},
		{"one producer feeding two", `{"steps": [[{"cmd": "echo"}, {"cmd": "cat", "stdin_from": 0}, {"cmd": "cat", "stdin_from": 0}]]}`,
			"steps[0][2].stdin_from: task 0 feeds steps[0][1] already; a task feeds one task at most", false},
		{"not an integer", `{"steps": [[{"cmd": "echo"}, {"cmd": "cat", "stdin_from": "0"}]]}`,
			"steps[0][1].stdin_from: expected the index of a task of the step (an integer)", true},
		{"in a later step", `[{"cmd": "true"}, {"cmd": "cat", "stdin_from": 0}]`, "steps[1].stdin_from: only in a parallel step", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var resp *http.Response
			if tc.malformed {
				resp = doMalformed(t, s, "POST", "/execute", tc.body)
			} else {
				resp = execute(s, tc.body)
			}
			e := expectError(t, resp, 400, svc.CodeInvalidRequest)
			if e.Error != tc.msg {
				t.Errorf("message %q, want %q", e.Error, tc.msg)
			}
		})
	}
	if n := metric(t, s, "svc_task_duration_seconds_count"); n != ran {
		t.Errorf("%v tasks ran for refused requests", n-ran)
	}
}
