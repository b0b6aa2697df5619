package httpapi_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v3"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/httpapi"
	"github.com/svc-sandbox/svc/internal/apicheck"
	"github.com/svc-sandbox/svc/svctest"
)

// answers are the statuses each operation can answer, read off its
// handler: 401 and 429 wherever a key is needed (a wrong key, the rate
// limit), 500 everywhere (a panic is answered internal_error), 503 where
// the handler refuses work while draining or the file store can be
// closed under it, and each handler's own.
var answers = map[string][]int{
	"POST /execute":     {200, 400, 401, 404, 408, 413, 422, 429, 500, 503, 504},
	"POST /file":        {200, 201, 400, 401, 408, 413, 429, 500, 503},
	"GET /file":         {200, 401, 429, 500},
	"GET /file/{id}":    {200, 400, 401, 404, 429, 500, 503},
	"DELETE /file/{id}": {204, 400, 401, 404, 429, 500, 503},
	"DELETE /cache":     {200, 401, 409, 429, 500},
	"GET /info":         {200, 401, 429, 500},
	"GET /languages":    {200, 401, 429, 500},
	"GET /metrics":      {200, 401, 429, 500},
	"GET /health":       {200, 500, 503},
	"HEAD /health":      {200, 500, 503},
	"GET /openapi.json": {200, 500},
}

// otherStatus is the code answered with another status than its own, by
// status: a request body the client paused past BODY_IDLE_TIMEOUT_MS is
// 408 cancelled (the spec has no code of its own for it).
var otherStatus = map[int]svc.Code{408: svc.CodeCancelled}

// TestOpenAPIDocument checks openapi.yaml itself: it is a valid OpenAPI
// 3.1 document; every operation has exactly the statuses the server can
// answer, each error response the error body with codes whose status is
// its own (httpapi.Status), and the headers API.md gives it; its enums
// are the library's.
func TestOpenAPIDocument(t *testing.T) {
	doc, err := apicheck.Document()
	if err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	if len(doc.Security) != 1 || doc.Components.SecuritySchemes["apiKey"].Value.Scheme != "bearer" {
		t.Errorf("document security %v: want the bearer scheme apiKey", doc.Security)
	}
	seen := map[string]bool{}
	codes := map[svc.Code]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			name := method + " " + path
			seen[name] = true
			want, ok := answers[name]
			if !ok {
				t.Errorf("%s: in the document, not in the server", name)
				continue
			}
			var got []int
			for s := range op.Responses.Map() {
				n, err := strconv.Atoi(s)
				if err != nil {
					t.Errorf("%s: response %q is not a status", name, s)
				}
				got = append(got, n)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s: statuses %v, the server answers %v", name, got, want)
			}
			// A key can be wrong or over its rate limit.
			public := op.Security != nil && len(*op.Security) == 0
			if keyed := slices.Contains(got, 401) && slices.Contains(got, 429); keyed == public {
				t.Errorf("%s: needs no key: %v; has 401 and 429: %v", name, public, keyed)
			}
			for _, status := range got {
				r := op.Responses.Status(status).Value
				for _, c := range checkResponse(t, fmt.Sprintf("%s %d", name, status), method, status, r) {
					codes[c] = true
				}
			}
		}
	}
	for name := range answers {
		if !seen[name] {
			t.Errorf("%s: not in the document", name)
		}
	}
	for _, c := range svc.Codes() {
		if !codes[c] {
			t.Errorf("code %s is in no response", c)
		}
	}

	enum := func(schema string) []string {
		var vs []string
		for _, v := range doc.Components.Schemas[schema].Value.Enum {
			vs = append(vs, v.(string))
		}
		return vs
	}
	var libCodes, profiles []string
	for _, c := range svc.Codes() {
		libCodes = append(libCodes, string(c))
	}
	for _, p := range svc.Profiles() {
		profiles = append(profiles, string(p))
	}
	if got := enum("ErrorCode"); !slices.Equal(got, libCodes) {
		t.Errorf("ErrorCode %v, the library's codes %v", got, libCodes)
	}
	if got := enum("Profile"); !slices.Equal(got, profiles) {
		t.Errorf("Profile %v, the library's %v", got, profiles)
	}
	// Every outcome, in API.md's precedence order, and on the side of the
	// result shape that Outcome.Ran gives it.
	outcomes := []svc.Outcome{svc.OutcomeInfrastructureFailure, svc.OutcomeNotStarted, svc.OutcomePolicyViolation,
		svc.OutcomeAncestorOutOfMemory, svc.OutcomeOutOfMemory, svc.OutcomeTimedOut, svc.OutcomeCPUTimeExceeded,
		svc.OutcomeOutputLimit, svc.OutcomePidsLimit, svc.OutcomeSignaled, svc.OutcomeExited}
	var completed, notRun []string
	for _, o := range outcomes {
		if o.Ran() {
			completed = append(completed, string(o))
		} else {
			notRun = append(notRun, string(o))
		}
	}
	if got := enum("CompletedOutcome"); !slices.Equal(got, completed) {
		t.Errorf("CompletedOutcome %v, want %v", got, completed)
	}
	if got := enum("NotRunOutcome"); !slices.Equal(got, notRun) {
		t.Errorf("NotRunOutcome %v, want %v", got, notRun)
	}
	mapping := doc.Components.Schemas["TaskResult"].Value.Discriminator.Mapping
	for _, o := range outcomes {
		want := "#/components/schemas/NotRunResult"
		if o.Ran() {
			want = "#/components/schemas/CompletedResult"
		}
		if got := mapping[string(o)].Ref; got != want {
			t.Errorf("discriminator maps %s to %q, want %q", o, got, want)
		}
	}
}

// checkResponse checks one response of an operation and returns the error
// codes it allows.
func checkResponse(t *testing.T, name, method string, status int, r *openapi3.Response) []svc.Code {
	t.Helper()
	header := func(h string) bool {
		ref, ok := r.Headers[h]
		return ok && ref.Value.Required
	}
	if !header("X-Request-Id") {
		t.Errorf("%s: no required X-Request-Id", name)
	}
	switch status {
	case 401:
		if !header("WWW-Authenticate") {
			t.Errorf("%s: no required WWW-Authenticate", name)
		}
	case 429, 503:
		if !header("Retry-After") {
			t.Errorf("%s: no required Retry-After", name)
		}
	}
	if status < 400 || method == "HEAD" {
		return nil
	}
	media := r.Content.Get("application/json")
	if media == nil || len(r.Content) != 1 {
		t.Errorf("%s: an error response must have exactly an application/json body", name)
		return nil
	}
	s := media.Schema.Value
	if len(s.AllOf) != 2 || s.AllOf[0].Ref != "#/components/schemas/Error" {
		t.Errorf("%s: want allOf [Error, the codes of this status]", name)
		return nil
	}
	var codes []svc.Code
	for _, v := range s.AllOf[1].Value.Properties["code"].Value.Enum {
		c := svc.Code(v.(string))
		codes = append(codes, c)
		if st, ok := httpapi.Status(c); (!ok || st != status) && otherStatus[status] != c {
			t.Errorf("%s: code %s has status %d", name, c, st)
		}
	}
	if len(codes) == 0 {
		t.Errorf("%s: no code", name)
	}
	return codes
}

// TestOpenAPIServed: GET /openapi.json, without a key, is the embedded
// document as JSON, itself a valid document.
func TestOpenAPIServed(t *testing.T) {
	s := newServer(t, svctest.Config{})
	var want any
	if err := yaml.Unmarshal(svc.OpenAPI(), &want); err != nil {
		t.Fatal(err)
	}
	want = viaJSON(t, want)
	for _, prefix := range []string{"", "/api/v1"} {
		resp := must(s.Client.Get(s.URL + prefix + "/openapi.json"))
		b := body(t, resp)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s/openapi.json: %d %s", prefix, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		checkRequestID(t, resp)
		var got any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s/openapi.json is not openapi.yaml", prefix)
		}
		if !strings.HasPrefix(string(b), `{"openapi":"3.1.0","info":`) {
			t.Errorf("the keys are not in the document's order: %.40s", b)
		}
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(b)
		if err == nil {
			err = doc.Validate(loader.Context)
		}
		if err != nil {
			t.Errorf("the served document is not valid: %v", err)
		}
	}
}

// viaJSON returns v as encoding/json decodes its JSON form.
func viaJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestServersAreChecked: the tests of this package and of package client
// start their servers with their newServer, which checks the traffic
// against openapi.yaml; the fuzz target checks its own.
func TestServersAreChecked(t *testing.T) {
	allowed := map[string]bool{"helpers_test.go": true, "fuzz_test.go": true}
	for _, dir := range []string{".", "../client"} {
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no test files in %s: %v", dir, err)
		}
		for _, f := range files {
			if filepath.Base(f) == "openapi_test.go" && dir == "." {
				continue // this test names what it looks for
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			src := string(b)
			if strings.Contains(src, "svctest.NewServer(") && !allowed[filepath.Base(f)] {
				t.Errorf("%s calls svctest.NewServer: use newServer, which checks the traffic against openapi.yaml", f)
			}
			for _, unchecked := range []string{"http.DefaultClient", "http.Get(", "http.Post("} {
				if strings.Contains(src, unchecked) {
					t.Errorf("%s uses %s: send through the server's client (s.Client), which checks the traffic against openapi.yaml", f, unchecked)
				}
			}
		}
	}
}
