package httpapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/httpapi"
	"github.com/svc-sandbox/svc/svctest"
)

// TestEndpoints goes through every row of API.md's endpoint table, on the
// canonical paths and under /api/v1.
func TestEndpoints(t *testing.T) {
	s := newServer(t, svctest.Config{})
	for _, prefix := range []string{"", "/api/v1"} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			// POST /execute: 200, envelope.
			var er executeResponse
			decode(t, execute(s, hello), 200, &er)
			if r := single(t, er.Results[1]); r.Outcome != "exited" || r.Stdout != "hello from the sandbox\n" {
				t.Errorf("run step: %+v", r)
			}
			if er.Cache.Enabled {
				t.Error("cache summary says enabled without a cache")
			}
			// Legacy: a bare array answers a bare array.
			var legacy []json.RawMessage
			decode(t, s.Do("POST", prefix+"/execute", `[{"cmd": "echo", "args": ["hi"]}]`), 200, &legacy)
			if len(legacy) != 1 || single(t, legacy[0]).Stdout != "hi\n" {
				t.Errorf("legacy: %s", legacy)
			}

			// POST /file: 201 new, 200 already stored.
			content := []byte("stored bytes under " + prefix + "\n")
			sum := sha256.Sum256(content)
			id := hex.EncodeToString(sum[:])
			var up uploaded
			decode(t, upload(t, s, prefix+"/file", "data.txt", "text/plain", content), 201, &up)
			if up != (uploaded{id, int64(len(content)), false}) {
				t.Errorf("upload: %+v, want id %s", up, id)
			}
			decode(t, upload(t, s, prefix+"/file", "other.txt", "", content), 200, &up)
			if !up.AlreadyExists || up.FileID != id {
				t.Errorf("upload again: %+v", up)
			}

			// GET /file: the entry, newest first.
			var list struct {
				Files []map[string]any `json:"files"`
			}
			decode(t, s.Do("GET", prefix+"/file", ""), 200, &list)
			if len(list.Files) == 0 || list.Files[0]["id"] != id {
				t.Fatalf("list: %v", list)
			}
			f := list.Files[0]
			if keys := slices.Sorted(maps.Keys(f)); !slices.Equal(keys, []string{"content_type", "created_at", "filename", "id", "size"}) {
				t.Errorf("entry fields %v", keys)
			}
			if f["filename"] != "data.txt" || f["content_type"] != "text/plain" || f["size"] != float64(len(content)) {
				t.Errorf("entry %v", f)
			}
			if ts, err := time.Parse(time.RFC3339, f["created_at"].(string)); err != nil || !strings.HasSuffix(f["created_at"].(string), "Z") || time.Since(ts) > time.Minute {
				t.Errorf("created_at %v: %v", f["created_at"], err)
			}

			// GET /file/{id}: the bytes and their headers.
			resp := s.Do("GET", prefix+"/file/"+id, "")
			got := body(t, resp)
			if resp.StatusCode != 200 || !bytes.Equal(got, content) {
				t.Errorf("download: %d %q", resp.StatusCode, got)
			}
			checkRequestID(t, resp)
			for k, want := range map[string]string{"Content-Type": "text/plain", "Content-Length": fmt.Sprint(len(content)), "ETag": `"` + id + `"`} {
				if v := resp.Header.Get(k); v != want {
					t.Errorf("download %s: %q, want %q", k, v, want)
				}
			}

			// A task uses the stored file by id.
			decode(t, execute(s, `{"steps": [{"cmd": "cat", "args": ["in.txt"], "files": {"in.txt": {"file_id": "`+id+`"}}}]}`), 200, &er)
			if r := single(t, er.Results[0]); r.Stdout != string(content) {
				t.Errorf("cat stored file: %+v", r)
			}

			// DELETE /file/{id}: 204, empty; then not_found.
			resp = s.Do("DELETE", prefix+"/file/"+id, "")
			if b := body(t, resp); resp.StatusCode != 204 || len(b) != 0 {
				t.Errorf("delete: %d %q", resp.StatusCode, b)
			}
			checkRequestID(t, resp)
			expectError(t, s.Do("GET", prefix+"/file/"+id, ""), 404, svc.CodeNotFound)
			expectError(t, s.Do("DELETE", prefix+"/file/"+id, ""), 404, svc.CodeNotFound)

			// DELETE /cache: no cache here.
			expectError(t, s.Do("DELETE", prefix+"/cache", ""), 409, svc.CodeCacheDisabled)

			// GET /info: exactly API.md's shape.
			var info map[string]json.RawMessage
			decode(t, s.Do("GET", prefix+"/info", ""), 200, &info)
			checkInfo(t, s, info)

			// GET /metrics.
			resp = s.Do("GET", prefix+"/metrics", "")
			m := string(body(t, resp))
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") ||
				!strings.Contains(m, "svc_execution_slots_in_use 0\n") {
				t.Errorf("metrics: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), m)
			}

			// GET and HEAD /health, without a key.
			for _, method := range []string{"GET", "HEAD"} {
				resp, err := s.Client.Do(must(http.NewRequest(method, s.URL+prefix+"/health", nil)))
				if err != nil {
					t.Fatal(err)
				}
				b := body(t, resp)
				want := `{"status":"ok"}` + "\n"
				if method == "HEAD" {
					want = ""
				}
				if resp.StatusCode != 200 || string(b) != want {
					t.Errorf("%s /health: %d %q", method, resp.StatusCode, b)
				}
				checkRequestID(t, resp)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// checkInfo checks /info against API.md and the server's configuration.
func checkInfo(t *testing.T, s *svctest.Server, info map[string]json.RawMessage) {
	t.Helper()
	want := []string{"arch", "body_idle_timeout_ms", "cache", "cgroup_version", "go_build_cache", "image_id", "limits", "queue_timeout_ms", "sandbox_profiles", "toolchains", "version"}
	if keys := slices.Sorted(maps.Keys(info)); !slices.Equal(keys, want) {
		t.Errorf("info fields %v, want %v", keys, want)
	}
	var limits map[string]any
	json.Unmarshal(info["limits"], &limits)
	wantLimits := []string{"cpu_max", "cpu_time_limit_ms", "execute_body_limit_bytes", "max_concurrency",
		"max_parallel_tasks", "max_steps", "memory_max_bytes", "output_limit_bytes", "overall_timeout_ms",
		"pids_max", "request_output_limit_bytes", "upload_file_limit_bytes", "wall_timeout_ms"}
	if keys := slices.Sorted(maps.Keys(limits)); !slices.Equal(keys, wantLimits) {
		t.Errorf("limits fields %v", keys)
	}
	if limits["max_concurrency"] != float64(s.Sandbox.Limits().MaxConcurrency) {
		t.Errorf("limits %v", limits)
	}
	if q := string(info["queue_timeout_ms"]); q != strconv.FormatInt(s.Sandbox.Config().QueueTimeout.Milliseconds(), 10) {
		t.Errorf("queue_timeout_ms %s", q)
	}
	if b := string(info["body_idle_timeout_ms"]); b != "10000" {
		t.Errorf("body_idle_timeout_ms %s, want the default 10000", b)
	}
	var cache map[string]any
	json.Unmarshal(info["cache"], &cache)
	if keys := slices.Sorted(maps.Keys(cache)); !slices.Equal(keys, []string{"backend", "enabled", "namespace", "timeout_ms", "ttl_secs"}) || cache["enabled"] != false {
		t.Errorf("cache %v", cache)
	}
	var profiles struct {
		Allowed []string `json:"allowed"`
		Default string   `json:"default"`
	}
	json.Unmarshal(info["sandbox_profiles"], &profiles)
	if !slices.Equal(profiles.Allowed, []string{"compile_v2", "native_v2"}) || profiles.Default != "compile_v2" {
		t.Errorf("sandbox_profiles %s", info["sandbox_profiles"])
	}
	if string(info["cgroup_version"]) != "1" && string(info["cgroup_version"]) != "2" {
		t.Errorf("cgroup_version %s", info["cgroup_version"])
	}
	var arch, image string
	json.Unmarshal(info["arch"], &arch)
	json.Unmarshal(info["image_id"], &image)
	if arch == "" || len(image) != 16 {
		t.Errorf("arch %q image_id %q", arch, image)
	}
	var toolchains []string
	if err := json.Unmarshal(info["toolchains"], &toolchains); err != nil || toolchains == nil {
		t.Errorf("toolchains %s", info["toolchains"])
	}
}

// TestErrors produces every error code of spec section 7 that a request
// can cause, with its status and headers. (sandbox_setup_failed and
// internal_error need a broken host; TestFailHidesInternalErrors covers
// how they are answered. cancelled has no one to answer:
// TestDisconnectFreesSlot.)
func TestErrors(t *testing.T) {
	s := newServer(t, svctest.Config{
		Sandbox: svc.Config{
			Limits: svc.Limits{
				ExecuteBodyLimit: 4096, UploadFileLimit: 1024,
				MaxSteps: 3, MaxParallelTasks: 2, MaxConcurrency: 2,
			},
		},
		FileStore: svc.FileStoreConfig{MaxBytes: 1500},
	})
	missing := strings.Repeat("ab", 32)
	// bad marks a request that breaks openapi.yaml on purpose.
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     svc.Code
		inMsg                    string
		bad                      bool
	}{
		{"unknown path", "GET", "/nope", "", 404, svc.CodeNotFound, "/nope", true},
		{"unknown path under v1", "GET", "/api/v1/nope", "", 404, svc.CodeNotFound, "", true},
		{"trailing slash", "POST", "/execute/", "", 404, svc.CodeNotFound, "", true},
		{"method", "GET", "/execute", "", 405, svc.CodeInvalidRequest, "POST", true},
		{"method on file id", "POST", "/file/" + missing, "", 405, svc.CodeInvalidRequest, "", true},
		{"empty body", "POST", "/execute", "", 400, svc.CodeInvalidRequest, "body", true},
		{"invalid JSON", "POST", "/execute", `{"steps": [`, 400, svc.CodeInvalidRequest, "body", true},
		{"unknown field", "POST", "/execute", `{"steps": [{"cmd": "true", "cmdd": 1}]}`, 400, svc.CodeInvalidRequest, `steps[0]: unknown field "cmdd"`, true},
		{"wrong type", "POST", "/execute", `{"steps": [[{"cmd": "true"}, {"cmd": 7}]]}`, 400, svc.CodeInvalidRequest, "steps[0][1].cmd", true},
		{"trailing data", "POST", "/execute", `{"steps": [{"cmd": "true"}]} {}`, 400, svc.CodeInvalidRequest, "trailing", true},
		{"empty steps", "POST", "/execute", `{"steps": []}`, 400, svc.CodeInvalidRequest, "steps", true},
		{"empty parallel step", "POST", "/execute", `{"steps": [[]]}`, 400, svc.CodeInvalidRequest, "steps[0]", true},
		{"body too large", "POST", "/execute", `{"steps": [{"cmd": "true", "stdin": "` + strings.Repeat("x", 5000) + `"}]}`, 413, svc.CodePayloadTooLarge, "4096", false},
		{"too many steps", "POST", "/execute", `[{"cmd": "true"}, {"cmd": "true"}, {"cmd": "true"}, {"cmd": "true"}]`, 422, svc.CodeLimitsExceeded, "steps", false},
		{"step too wide", "POST", "/execute", `[[{"cmd": "true"}, {"cmd": "true"}, {"cmd": "true"}]]`, 422, svc.CodeLimitsExceeded, "steps[0]", false},
		{"profile not allowed", "POST", "/execute", `[{"cmd": "true", "sandbox_profile": "compile_v1"}]`, 422, svc.CodeProfileNotAllowed, "compile_v1", false},
		{"file not stored", "POST", "/execute", `[{"cmd": "true", "files": {"a": {"file_id": "` + missing + `"}}}]`, 404, svc.CodeFileNotFound, "", false},
		{"bad file id", "GET", "/file/ABC", "", 400, svc.CodeInvalidRequest, "64", true},
		{"bad file id, upper case", "GET", "/file/" + strings.ToUpper(missing), "", 400, svc.CodeInvalidRequest, "", true},
		{"bad file id on delete", "DELETE", "/file/xyz", "", 400, svc.CodeInvalidRequest, "", true},
		{"file not found", "GET", "/file/" + missing, "", 404, svc.CodeNotFound, "", false},
		{"delete not found", "DELETE", "/file/" + missing, "", 404, svc.CodeNotFound, "", false},
		{"upload not multipart", "POST", "/file", "just bytes", 400, svc.CodeInvalidRequest, "multipart", true},
		{"cache disabled", "DELETE", "/cache", "", 409, svc.CodeCacheDisabled, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			do := s.Do
			if tc.bad {
				do = func(method, path, body string) *http.Response { return doMalformed(t, s, method, path, body) }
			}
			e := expectError(t, do(tc.method, tc.path, tc.body), tc.status, tc.code)
			if !strings.Contains(e.Error, tc.inMsg) {
				t.Errorf("message %q does not say %q", e.Error, tc.inMsg)
			}
		})
	}

	t.Run("upload without a file part", func(t *testing.T) {
		body := "--b\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\nx\r\n--b--\r\n"
		req := malformed(s.Request("POST", "/file", strings.NewReader(body)))
		req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
		e := expectError(t, must(s.Client.Do(req)), 400, svc.CodeInvalidRequest)
		if !strings.Contains(e.Error, `"file"`) {
			t.Errorf("message %q", e.Error)
		}
	})
	t.Run("malformed multipart", func(t *testing.T) {
		req := malformed(s.Request("POST", "/file", strings.NewReader("--b\r\nno end")))
		req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
		expectError(t, must(s.Client.Do(req)), 400, svc.CodeInvalidRequest)
	})
	t.Run("upload too large", func(t *testing.T) {
		expectError(t, upload(t, s, "/file", "big", "", bytes.Repeat([]byte("x"), 1025)), 413, svc.CodePayloadTooLarge)
		// Far over the limit: the body limit cuts it off too.
		expectError(t, upload(t, s, "/file", "huge", "", bytes.Repeat([]byte("x"), 200<<10)), 413, svc.CodePayloadTooLarge)
	})
	t.Run("store full", func(t *testing.T) {
		decode(t, upload(t, s, "/file", "a", "", bytes.Repeat([]byte("a"), 1000)), 201, new(uploaded))
		expectError(t, upload(t, s, "/file", "b", "", bytes.Repeat([]byte("b"), 1000)), 503, svc.CodeCapacityExhausted)
	})
	t.Run("unauthorized", func(t *testing.T) {
		for header, word := range map[string]string{"": "missing", "Bearer wrong": "invalid", "Basic abc": "missing"} {
			req := must(http.NewRequest("GET", s.URL+"/info", nil))
			if header != "" {
				req.Header.Set("Authorization", header)
			}
			if word == "missing" {
				req = malformed(req)
			}
			e := expectError(t, must(s.Client.Do(req)), 401, svc.CodeUnauthorized)
			if !strings.Contains(e.Error, word) {
				t.Errorf("%q: message %q does not say %q", header, e.Error, word)
			}
		}
		// Every endpoint but /health needs the key.
		for _, p := range []string{"POST /execute", "POST /file", "GET /file", "GET /file/" + missing, "DELETE /file/" + missing,
			"DELETE /cache", "GET /info", "GET /metrics", "POST /api/v1/execute"} {
			method, path, _ := strings.Cut(p, " ")
			expectError(t, must(s.Client.Do(malformed(must(http.NewRequest(method, s.URL+path, nil))))), 401, svc.CodeUnauthorized)
		}
	})
}

// TestUploadCapacity fills the upload slots with an upload that is still
// arriving.
func TestUploadCapacity(t *testing.T) {
	s := newServer(t, svctest.Config{FileStore: svc.FileStoreConfig{MaxConcurrentUploads: 1}})
	pr, pw := io.Pipe()
	req := s.Request("POST", "/file", pr)
	req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
	done := make(chan *http.Response)
	go func() {
		resp, err := s.Client.Do(req)
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	io.WriteString(pw, "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"slow\"\r\n\r\nsome bytes")
	// The store writes an upload to a temporary file once it has its slot.
	waitFor(t, 10*time.Second, "the upload has its slot", func() bool {
		m, _ := filepath.Glob(filepath.Join(s.StateDir, "files", ".tmp-*"))
		return len(m) > 0
	})
	if n := metric(t, s, "svc_uploads_in_flight"); n != 1 {
		t.Errorf("svc_uploads_in_flight %v", n)
	}
	expectError(t, upload(t, s, "/file", "x", "", []byte("x")), 503, svc.CodeCapacityExhausted)
	io.WriteString(pw, "\r\n--b--\r\n")
	pw.Close()
	decode(t, <-done, 201, new(uploaded))
}

// TestRequestIDs checks that an incoming x-request-id is kept when sane,
// replaced otherwise, and that the log lines carry it.
func TestRequestIDs(t *testing.T) {
	var mu sync.Mutex
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&lockedWriter{mu: &mu, w: &logs}, nil))
	s := newServer(t, svctest.Config{API: httpapi.Config{Logger: logger}})
	for in, keep := range map[string]bool{"trace-abc-123": true, strings.Repeat("x", 129): false, "bad id": false} {
		req := malformed(s.Request("GET", "/nope", nil))
		req.Header.Set("X-Request-Id", in)
		resp := must(s.Client.Do(req))
		body(t, resp)
		got := resp.Header.Get("X-Request-Id")
		if keep != (got == in) || !keep && !uuidRE.MatchString(got) {
			t.Errorf("sent %q, got %q", in, got)
		}
		mu.Lock()
		l := logs.String()
		mu.Unlock()
		if !strings.Contains(l, `"request_id":"`+got+`"`) {
			t.Errorf("no log line with request_id %s:\n%s", got, l)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestKeyRotation serves two keys at once: clients move from the old to
// the new one, then the old one goes.
func TestKeyRotation(t *testing.T) {
	dir, err := os.MkdirTemp("", "svc-rotation-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	get := func(s *svctest.Server, key string) *http.Response {
		req := must(http.NewRequest("GET", s.URL+"/info", nil))
		req.Header.Set("Authorization", "Bearer "+key)
		return must(s.Client.Do(req))
	}
	s := newServer(t, svctest.Config{Sandbox: svc.Config{StateDir: dir}, API: httpapi.Config{Keys: []string{"old-key-1", "new-key-2"}}})
	for _, k := range []string{"old-key-1", "new-key-2"} {
		decode(t, get(s, k), 200, new(map[string]any))
	}
	expectError(t, get(s, "new-key-"), 401, svc.CodeUnauthorized)
	s.Close()

	s = newServer(t, svctest.Config{Sandbox: svc.Config{StateDir: dir}, API: httpapi.Config{Keys: []string{"new-key-2"}}})
	decode(t, get(s, "new-key-2"), 200, new(map[string]any))
	expectError(t, get(s, "old-key-1"), 401, svc.CodeUnauthorized)
}

// TestRateLimit drives the per-key buckets with an injected clock.
func TestRateLimit(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	s := newServer(t, svctest.Config{API: httpapi.Config{
		Keys:               []string{"key-a", "key-b"},
		RateLimitPerMinute: 2,
		Now:                func() time.Time { return time.Unix(0, now.Load()) },
	}})
	get := func(key string) *http.Response {
		req := must(http.NewRequest("GET", s.URL+"/info", nil))
		req.Header.Set("Authorization", "Bearer "+key)
		return must(s.Client.Do(req))
	}
	decode(t, get("key-a"), 200, new(map[string]any))
	decode(t, get("key-a"), 200, new(map[string]any))
	resp := get("key-a")
	expectError(t, resp, 429, svc.CodeRateLimited)
	if ra := resp.Header.Get("Retry-After"); ra != "30" {
		t.Errorf("Retry-After %q, want 30 (2 a minute)", ra)
	}
	// Another key has its own bucket; /health is not limited; a wrong
	// key is unauthorized, not rate limited.
	decode(t, get("key-b"), 200, new(map[string]any))
	for range 3 {
		body(t, must(s.Client.Get(s.URL+"/health")))
	}
	expectError(t, get("key-c"), 401, svc.CodeUnauthorized)

	now.Add(int64(29 * time.Second))
	resp = get("key-a")
	expectError(t, resp, 429, svc.CodeRateLimited)
	if ra := resp.Header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After %q after 29 s, want 1", ra)
	}
	now.Add(int64(time.Second))
	decode(t, get("key-a"), 200, new(map[string]any))
	s.Key = "key-b" // key-a has no token left for /metrics
	if n := metric(t, s, "svc_rate_limited_total"); n != 2 {
		t.Errorf("svc_rate_limited_total %v", n)
	}
}

// TestCapacity: a request holds as many slots as its widest step has
// tasks, for as long as its sandbox exists; without a free slot a request
// is refused at once.
func TestCapacity(t *testing.T) {
	s := newServer(t, svctest.Config{Sandbox: svc.Config{Limits: svc.Limits{MaxConcurrency: 2, MaxParallelTasks: 2, WallTimeout: 30 * time.Second}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wide := `{"steps": [{"cmd": "true"}, [{"cmd": "sleep", "args": ["30"]}, {"cmd": "true"}]]}`
	done := make(chan error, 1)
	go func() {
		req := s.Request("POST", "/execute", strings.NewReader(wide)).WithContext(ctx)
		resp, err := s.Client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	// The first step is one task, yet the request holds two slots.
	waitFor(t, 10*time.Second, "the wide request holds its slots", func() bool { return s.Sandbox.SlotsInUse() == 2 })
	if n := metric(t, s, "svc_execution_slots_in_use"); n != 2 {
		t.Errorf("svc_execution_slots_in_use %v", n)
	}
	if n := metric(t, s, "svc_execution_slots"); n != 2 {
		t.Errorf("svc_execution_slots %v", n)
	}
	if n := metric(t, s, "svc_execution_queue_length"); n != 0 {
		t.Errorf("svc_execution_queue_length %v", n)
	}
	start := time.Now()
	expectError(t, execute(s, `{"steps": [{"cmd": "true"}]}`), 503, svc.CodeCapacityExhausted)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("refusal took %v: it must not wait for a slot", d)
	}
	cancel()
	<-done
	waitFor(t, 10*time.Second, "the slots are free again", func() bool { return s.Sandbox.SlotsInUse() == 0 })
	var er executeResponse
	decode(t, execute(s, `{"steps": [{"cmd": "true"}]}`), 200, &er)
	if n := metric(t, s, "svc_execution_queue_wait_seconds_count"); n != 1 {
		t.Errorf("svc_execution_queue_wait_seconds_count %v, want 1", n)
	}
}

// TestDisconnectFreesSlot: a client that goes away cancels its request;
// the sandbox is killed and the slot freed long before the wall timeout.
func TestDisconnectFreesSlot(t *testing.T) {
	s := newServer(t, svctest.Config{Sandbox: svc.Config{Limits: svc.Limits{WallTimeout: 60 * time.Second, OverallTimeout: 120 * time.Second}}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		req := s.Request("POST", "/execute", strings.NewReader(`{"steps": [{"cmd": "sleep", "args": ["60.4711"]}]}`)).WithContext(ctx)
		if resp, err := s.Client.Do(req); err == nil {
			resp.Body.Close()
			t.Error("the request finished before its client went away")
		}
	}()
	waitFor(t, 10*time.Second, "the task runs", func() bool { return sleeper() != "" })
	start := time.Now()
	cancel()
	<-done
	waitFor(t, 10*time.Second, "the slot is free", func() bool { return s.Sandbox.SlotsInUse() == 0 })
	t.Logf("slot freed %v after the client left", time.Since(start))
	waitFor(t, 5*time.Second, "the cancelled response is counted", func() bool {
		return metric(t, s, `svc_http_responses_total{status="503",code="cancelled"}`) == 1
	})
	if p := sleeper(); p != "" {
		t.Errorf("the task outlived its request: %s", p)
	}
}

// sleeper returns a /proc entry of a process running the task of
// TestDisconnectFreesSlot (sleep 60.4711, an argument no other test uses),
// or "".
func sleeper() string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if cmd, _ := os.ReadFile(filepath.Join(d, "cmdline")); string(cmd) == "sleep\x0060.4711\x00" {
			return d
		}
	}
	return ""
}

// TestDeadline: a request that overruns the overall timeout answers 504
// deadline_exceeded a few seconds after it, whatever its task does.
func TestDeadline(t *testing.T) {
	s := newServer(t, svctest.Config{Sandbox: svc.Config{Limits: svc.Limits{OverallTimeout: time.Second, WallTimeout: 30 * time.Second}}})
	start := time.Now()
	// The task ignores the polite signals; the sandbox kills with SIGKILL.
	expectError(t, execute(s, `{"steps": [{"cmd": "sh", "args": ["-c", "trap '' TERM INT HUP; sleep 30"]}]}`), 504, svc.CodeDeadlineExceeded)
	if d := time.Since(start); d < time.Second || d > 6*time.Second {
		t.Errorf("504 after %v; want between 1 s and a few seconds past it", d)
	}
	if n := s.Sandbox.SlotsInUse(); n != 0 {
		t.Errorf("%d slots still held", n)
	}
}

// TestDrain: once draining, /health answers 503 and new work is refused
// with shutting_down; reading goes on.
func TestDrain(t *testing.T) {
	s := newServer(t, svctest.Config{})
	s.Handler.Drain()
	for _, method := range []string{"GET", "HEAD"} {
		resp := must(s.Client.Do(must(http.NewRequest(method, s.URL+"/health", nil))))
		if method == "GET" {
			expectError(t, resp, 503, svc.CodeShuttingDown)
		} else if body(t, resp); resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
			t.Errorf("HEAD /health while draining: %d", resp.StatusCode)
		}
	}
	expectError(t, execute(s, `{"steps": [{"cmd": "true"}]}`), 503, svc.CodeShuttingDown)
	expectError(t, upload(t, s, "/file", "x", "", []byte("x")), 503, svc.CodeShuttingDown)
	decode(t, s.Do("GET", "/info", ""), 200, new(map[string]any))
}

// TestShutdown: a running request is killed and answers 503
// shutting_down; the server stops within the shutdown timeout.
func TestShutdown(t *testing.T) {
	s := newServer(t, svctest.Config{Sandbox: svc.Config{Limits: svc.Limits{WallTimeout: 60 * time.Second}}})
	got := make(chan *http.Response, 1)
	go func() { got <- execute(s, `{"steps": [{"cmd": "sleep", "args": ["60"]}]}`) }()
	waitFor(t, 10*time.Second, "the request runs", func() bool { return s.Sandbox.SlotsInUse() == 1 })
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	expectError(t, <-got, 503, svc.CodeShuttingDown)
	if _, err := s.Client.Get(s.URL + "/health"); err == nil {
		t.Error("the server still accepts connections")
	}
}

// TestRestartKeepsFiles: uploaded files survive a restart on the same
// state directory.
func TestRestartKeepsFiles(t *testing.T) {
	dir, err := os.MkdirTemp("", "svc-restart-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := svctest.Config{Sandbox: svc.Config{StateDir: dir}, API: httpapi.Config{Keys: []string{"k"}}}
	s := newServer(t, cfg)
	var up uploaded
	decode(t, upload(t, s, "/file", "keep.txt", "text/plain", []byte("kept\n")), 201, &up)
	s.Close()

	s = newServer(t, cfg)
	resp := s.Do("GET", "/file/"+up.FileID, "")
	if b := body(t, resp); resp.StatusCode != 200 || string(b) != "kept\n" || resp.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("after restart: %d %q %s", resp.StatusCode, b, resp.Header.Get("Content-Type"))
	}
	var er executeResponse
	decode(t, execute(s, `{"steps": [{"cmd": "cat", "args": ["k"], "files": {"k": {"file_id": "`+up.FileID+`"}}}]}`), 200, &er)
	if r := single(t, er.Results[0]); r.Stdout != "kept\n" {
		t.Errorf("cat: %+v", r)
	}
	if n := metric(t, s, "svc_filestore_files"); n != 1 {
		t.Errorf("svc_filestore_files %v", n)
	}
}

// TestMetrics checks the metric names after some traffic.
func TestMetrics(t *testing.T) {
	s := newServer(t, svctest.Config{})
	decode(t, execute(s, `{"steps": [{"cmd": "true"}, {"cmd": "false"}]}`), 200, new(executeResponse))
	decode(t, upload(t, s, "/file", "m", "", []byte("metrics")), 201, new(uploaded))
	expectError(t, doMalformed(t, s, "GET", "/nope", ""), 404, svc.CodeNotFound)
	m := string(body(t, s.Do("GET", "/metrics", "")))
	for _, want := range []string{
		"svc_execution_slots ", "svc_execution_slots_in_use 0",
		`svc_http_responses_total{status="200",code=""} 1`,
		`svc_http_responses_total{status="201",code=""} 1`,
		`svc_http_responses_total{status="404",code="not_found"} 1`,
		`svc_http_request_duration_seconds_count{path="/execute"} 1`,
		`svc_http_request_duration_seconds_count{path="other"} 1`,
		`svc_tasks_total{outcome="exited"} 2`, "svc_task_duration_seconds_count 2",
		"svc_cache_hits_total 0", "svc_cache_misses_total 0", "svc_cache_stores_total 0", "svc_cache_errors_total 0",
		"svc_cache_store_down 0",
		"svc_filestore_files 1", "svc_filestore_bytes 7", "svc_uploads_in_flight 0", "svc_rate_limited_total 0",
		"svc_http_requests_in_flight 1",
		// Error codes and outcomes are there from the start, at 0.
		`svc_http_responses_total{status="500",code="sandbox_setup_failed"} 0`,
		`svc_http_responses_total{status="503",code="capacity_exhausted"} 0`,
		`svc_tasks_total{outcome="infrastructure_failure"} 0`,
		// Prometheus histograms: cumulative le buckets up to +Inf.
		`svc_execution_queue_wait_seconds_bucket{le="0.001"} 1`,
		`svc_execution_queue_wait_seconds_bucket{le="+Inf"} 1`,
		`svc_task_duration_seconds_bucket{le="60"} 2`,
		`svc_task_duration_seconds_bucket{le="+Inf"} 2`,
		`svc_http_request_duration_seconds_bucket{path="/execute",le="120"} 1`,
		`svc_http_request_duration_seconds_bucket{path="/execute",le="+Inf"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(m, "vmrange") {
		t.Error("metrics have vmrange buckets: Prometheus cannot aggregate those")
	}
	if t.Failed() {
		t.Log(m)
	}
}
