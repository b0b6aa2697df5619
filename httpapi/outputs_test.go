package httpapi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/svctest"
)

// TestOutputsRoundTrip: POST /execute with outputs answers them as
// API.md shows, GET /file/{id} serves their bytes and GET /file lists
// them under their base names; a task without outputs has no field.
func TestOutputsRoundTrip(t *testing.T) {
	s := newServer(t, svctest.Config{})
	var er executeResponse
	decode(t, execute(s, `{"steps": [[
		{"cmd": "sh", "args": ["-c", "mkdir d; printf 'hello world\\n' > d/out.txt; ln -s /etc/shadow link"],
		 "outputs": ["./d/out.txt", "missing.txt", "link"]},
		{"cmd": "true"}
	]]}`), 200, &er)
	var results []json.RawMessage
	if err := json.Unmarshal(er.Results[0], &results); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("hello world\n"))
	id := hex.EncodeToString(sum[:])
	want := `"outputs":{"d/out.txt":{"file_id":"` + id + `","size":12},"link":{"error":"not_regular"},"missing.txt":{"error":"not_found"}}`
	if !strings.Contains(string(results[0]), want) {
		t.Errorf("result %s\nwant it to contain %s", results[0], want)
	}
	if strings.Contains(string(results[1]), "outputs") {
		t.Errorf("a task without outputs: %s", results[1])
	}
	resp := s.Do("GET", "/file/"+id, "")
	if b := body(t, resp); resp.StatusCode != 200 || string(b) != "hello world\n" {
		t.Errorf("GET /file/%s: %d %q", id, resp.StatusCode, b)
	}
	var list struct {
		Files []svc.StoredFile `json:"files"`
	}
	decode(t, s.Do("GET", "/file", ""), 200, &list)
	if len(list.Files) != 1 || list.Files[0].ID != id || list.Files[0].Filename == nil || *list.Files[0].Filename != "out.txt" {
		t.Errorf("GET /file: %+v", list.Files)
	}
}

// TestOutputsStoreFull: an output the file store has no room for is
// store_full in a 200 answer.
func TestOutputsStoreFull(t *testing.T) {
	s := newServer(t, svctest.Config{FileStore: svc.FileStoreConfig{MaxBytes: 100}})
	var er executeResponse
	decode(t, execute(s, `{"steps": [{"cmd": "sh", "args": ["-c", "head -c 200 /dev/zero > big; echo small > small"],
		"outputs": ["big", "small"]}]}`), 200, &er)
	if !strings.Contains(string(er.Results[0]), `"big":{"error":"store_full"}`) || !strings.Contains(string(er.Results[0]), `"small":{"file_id"`) {
		t.Errorf("result %s", er.Results[0])
	}
}

// TestOutputsInvalid: bad outputs are 400 invalid_request naming the
// field, and nothing runs.
func TestOutputsInvalid(t *testing.T) {
	s := newServer(t, svctest.Config{})
	many := make([]string, 33)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprintf("o%d", i))
	}
	for _, c := range []struct{ outputs, msg string }{
		{"[" + strings.Join(many, ",") + "]", "steps[1].outputs: 33 paths; at most 32 are allowed"},
		{`["a", "../b"]`, "steps[1].outputs[1]: path escapes the workspace"},
		{`["/etc/shadow"]`, "steps[1].outputs[0]: absolute path"},
		{`["a/b", "a//b/"]`, "steps[1].outputs[1]: same path as steps[1].outputs[0]"},
		{`["a", 1]`, "steps[1].outputs[1]: expected a string"},
		{`"a"`, "steps[1].outputs: expected an array of strings"},
	} {
		body := `{"steps": [{"cmd": "true"}, {"cmd": "touch", "args": ["ran"], "outputs": ` + c.outputs + `}]}`
		// Most break openapi.yaml on purpose.
		e := expectError(t, doMalformed(t, s, "POST", "/execute", body), 400, svc.CodeInvalidRequest)
		if !strings.Contains(e.Error, c.msg) {
			t.Errorf("outputs %.40s: %q, want %q", c.outputs, e.Error, c.msg)
		}
	}
}
