package svc_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/svc-sandbox/svc"
)

// TestLimitsJSON: the ServiceLimits object round-trips with spec 2.9's names.
func TestLimitsJSON(t *testing.T) {
	l := svc.DefaultLimits()
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"memory_max_bytes", "pids_max", `"cpu_max":"100000 100000"`, "wall_timeout_ms",
		"cpu_time_limit_ms", "overall_timeout_ms", "output_limit_bytes", "request_output_limit_bytes",
		"max_steps", "max_parallel_tasks", "max_concurrency", "execute_body_limit_bytes", "upload_file_limit_bytes"} {
		if !strings.Contains(string(b), name) {
			t.Errorf("%s missing from %s", name, b)
		}
	}
	var back svc.Limits
	if err := json.Unmarshal(b, &back); err != nil || back != l {
		t.Fatalf("round trip: %+v, %v; want %+v", back, err, l)
	}
	if err := json.Unmarshal([]byte(`{"cpu_max":"lots"}`), &back); err == nil {
		t.Error("a bad cpu_max was accepted")
	}
}
