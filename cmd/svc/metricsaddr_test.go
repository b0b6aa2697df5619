package main

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

var metricsAddrRE = regexp.MustCompile(`"metrics_addr":"([^"]+)"`)

// TestServeMetricsAddr: with METRICS_ADDR, a second listener serves GET
// /metrics without a key, and nothing else; /metrics on LISTEN_ADDR still
// wants one. Without it, the serving line names no metrics address.
func TestServeMetricsAddr(t *testing.T) {
	t.Run("off by default", func(t *testing.T) {
		p := startInProcess(t, nil)
		if m := metricsAddrRE.FindStringSubmatch(p.logs.String()); m != nil {
			t.Errorf("without METRICS_ADDR the server listens for metrics on %s", m[1])
		}
	})
	t.Run("on", func(t *testing.T) { serveMetricsAddr(t) })
}

func serveMetricsAddr(t *testing.T) {
	p := startInProcess(t, map[string]string{"METRICS_ADDR": "127.0.0.1:0"})
	m := metricsAddrRE.FindStringSubmatch(p.logs.String())
	if m == nil {
		t.Fatalf("the serving line names no metrics_addr:\n%s", p.logs)
	}
	url := "http://" + m[1]
	if m[1] == p.addr {
		t.Fatalf("metrics_addr %s is LISTEN_ADDR", m[1])
	}

	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b := readAll(t, resp)
	for _, want := range []string{"\nsvc_execution_slots_in_use 0\n", "# TYPE svc_tasks_total counter\n", "\nprocess_cpu_seconds_total ", "\ngo_goroutines "} {
		if !strings.Contains(b, want) {
			t.Errorf("GET %s/metrics without a key: %d, no %q in\n%s", url, resp.StatusCode, want, b)
		}
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("GET %s/metrics: %d %s", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	// Only /metrics, only GET and HEAD.
	for _, c := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/info", 404, `"code":"not_found"`},
		{"POST", "/execute", 404, `"code":"not_found"`},
		{"POST", "/metrics", 405, `"code":"invalid_request"`},
		{"HEAD", "/metrics", 200, ""},
	} {
		req, _ := http.NewRequest(c.method, url+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if b := readAll(t, resp); resp.StatusCode != c.status || !strings.Contains(b, c.code) {
			t.Errorf("%s %s on METRICS_ADDR: %d %s, want %d %s", c.method, c.path, resp.StatusCode, b, c.status, c.code)
		}
	}

	// LISTEN_ADDR's /metrics still wants a key.
	resp, err = http.Get("http://" + p.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if readAll(t, resp); resp.StatusCode != 401 {
		t.Errorf("GET /metrics on LISTEN_ADDR without a key: %d, want 401", resp.StatusCode)
	}
}
