package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestBenchInteractive runs the interactive figure once and checks its
// two rows: the host's round trip and the sandboxes', compared with it.
func TestBenchInteractive(t *testing.T) {
	requireRoot(t)
	var out, errs bytes.Buffer
	args := []string{"--runs", "3", "--heavy-runs", "1", "--warmup", "0", "--only", "^interactive$", "--json", "--uid-base", testUIDBase()}
	if err := benchCmd(args, &out, &errs); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errs.String())
	}
	var v struct {
		Rows []row `json:"rows"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	got := map[string]row{}
	for _, r := range v.Rows {
		got[r.Name] = r
	}
	host, sb := got["ping-pong round trip, host pipes"], got["ping-pong round trip, sandboxes"]
	if host.Samples != 1 || host.Median <= 0 || sb.Samples != 1 || sb.Median <= 0 || sb.Baseline != host.Name || sb.Ratio <= 0 {
		t.Errorf("rows %+v, %+v\n%s", host, sb, out.String())
	}
	t.Logf("round trip: host %v, sandboxes %v (%.2fx)", host.Median, sb.Median, sb.Ratio)
}
