package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/httpapi"
	"github.com/svc-sandbox/svc/internal/apicheck"
	"github.com/svc-sandbox/svc/svctest"
)

// FuzzDecodeExecute posts arbitrary bodies to POST /execute of a real
// server: it never panics (the server would answer 500 internal_error, or
// drop the connection) and every rejection is a 4xx with a known code and
// an error body.
//
// A body that decodes and validates would run sandboxes, which is slow
// (tens of milliseconds each) and not what this fuzzes: such bodies are
// skipped, after a check that the library accepts them. The seeds run in
// every go test; go test -fuzz=FuzzDecodeExecute ./httpapi explores.
func FuzzDecodeExecute(f *testing.F) {
	for _, seed := range []string{
		`{"steps": [{"cmd": "true"}]}`,
		`[{"cmd": "true"}]`,
		`{"steps": [[{"cmd": "a"}, {"cmd": "b", "args": ["x"], "env": {"A": "1"}}]], "cache": true, "stop_on_failure": false}`,
		`{"steps": [{"cmd": "cat", "files": {"a/b.c": "x", "d": {"file_id": "` + strings.Repeat("0", 64) + `"}}}]}`,
		``, `{}`, `[]`, `null`, `{"steps": null}`, `{"steps": [[]]}`, `{"steps": [{}]}`,
		`{"steps": [{"cmd": 1}]}`, `{"steps": [{"cmd": "x", "cmd": "y"}]}`, `{"steps": [{"cmd": "x"}]}x`,
		`{"steps": [{"cmd": "x", "files": {"../x": ""}}]}`, `{"steps": [{"cmd": "x", "working_dir": "rel"}]}`,
		`{"steps": [{"cmd": "x", "sandbox_profile": "native_v1"}]}`, `{"steps": [{"cmd": "x", "env": {"1A": ""}}]}`,
		"{\"steps\": [{\"cmd\": \"\xff\"}]}", `{"steps": [{"cmd": "\u0000"}]}`, `[[[[[[[[`, `{"steps": [{"cmd": "x", "cache": "yes"}]}`,
		`{"steps": [{"cmd": "x", "limits": {"cpu_time_limit_ms": 100, "pids_max": 65}}]}`, `{"steps": [{"cmd": "x", "limits": {"pids_max": 1.0}}]}`,
	} {
		f.Add([]byte(seed))
	}
	s := svctest.NewServer(f, svctest.Config{
		Sandbox: svc.Config{Limits: svc.Limits{MaxSteps: 4, MaxParallelTasks: 2, MaxConcurrency: 2, ExecuteBodyLimit: 64 << 10}},
		API:     httpapi.Config{Keys: []string{"fuzz"}},
	})
	known := map[svc.Code]bool{}
	for _, c := range svc.Codes() {
		known[c] = true
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if req, err := svc.DecodeRequest(strings.NewReader(string(b))); err == nil {
			if req.Validate(s.Sandbox.Limits(), s.Sandbox.Config().AllowedProfiles) == nil {
				t.Skip("valid: would run sandboxes")
			}
		}
		req, err := http.NewRequest("POST", s.URL+"/execute", strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer fuzz")
		req.Header.Set("Content-Type", "application/json")
		// The answers to the fuzzed bodies must be in openapi.yaml too.
		checked := &http.Client{Transport: apicheck.Transport(t, s.Client.Transport)}
		resp, err := checked.Do(malformed(req))
		if err != nil {
			t.Fatalf("no response: %v", err)
		}
		raw := body(t, resp)
		var e errorBody
		if err := json.Unmarshal(raw, &e); err != nil || e.Error == "" || !known[e.Code] {
			t.Fatalf("%d, not an error body: %q", resp.StatusCode, raw)
		}
		if resp.StatusCode < 400 || resp.StatusCode > 499 {
			t.Fatalf("%q: %d %s %q", b, resp.StatusCode, e.Code, e.Error)
		}
	})
}
