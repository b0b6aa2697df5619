package httpapi_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/svc-sandbox/svc/svctest"
)

// TestWorkspacesAndGoBuildCache: /metrics counts the workspaces that
// requests mixing profiles took prepared ahead (source="prepared"), none
// built on their path while one waited, and /info and /metrics agree on
// the Go build cache's state (off here: the server has none).
func TestWorkspacesAndGoBuildCache(t *testing.T) {
	s := newServer(t, svctest.Config{})
	prepared := `svc_workspaces_total{source="prepared"}`
	for i, req := range []string{
		`{"steps": [{"cmd": "true", "sandbox_profile": "native_v2"}]}`,
		`{"steps": [{"cmd": "true"}]}`,
		`{"steps": [{"cmd": "true", "sandbox_profile": "native_v2"}]}`,
		`{"steps": [{"cmd": "true"}]}`,
	} {
		// One is ready before each request: waited for as the state it
		// is, seen through the metric of the last request's.
		want := float64(i)
		waitFor(t, 2*time.Minute, "the workspaces counted", func() bool { return metric(t, s, prepared) == want })
		waitFor(t, 2*time.Minute, "a workspace prepared ahead", func() bool { return s.Sandbox.WorkspaceStats().Ready > 0 })
		if resp := s.Do("POST", "/execute", req); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body(t, resp))
		} else {
			resp.Body.Close()
		}
	}
	if n := metric(t, s, prepared); n != 4 {
		t.Errorf("%s %v, want 4", prepared, n)
	}
	if n := metric(t, s, `svc_workspaces_total{source="built"}`); n != 0 {
		t.Errorf(`svc_workspaces_total{source="built"} %v, want 0`, n)
	}
	var info struct {
		GoBuildCache struct {
			State string `json:"state"`
		} `json:"go_build_cache"`
	}
	if err := json.Unmarshal(body(t, s.Do("GET", "/info", "")), &info); err != nil {
		t.Fatal(err)
	}
	if info.GoBuildCache.State != "off" {
		t.Errorf("/info go_build_cache %+v, want off", info.GoBuildCache)
	}
	for _, st := range []string{"off", "preparing", "ready", "failed"} {
		want := 0.0
		if st == "off" {
			want = 1
		}
		if n := metric(t, s, `svc_go_build_cache_state{state="`+st+`"}`); n != want {
			t.Errorf(`svc_go_build_cache_state{state=%q} %v, want %v`, st, n, want)
		}
	}
}
