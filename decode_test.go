package svc

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

const testFileID = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

func boolPtr(b bool) *bool { return &b }

// wantInvalid asserts that err is an *Error with code invalid_request whose
// message contains want.
func wantInvalid(t *testing.T, err error, want string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *Error", err, err)
	}
	if e.Code != CodeInvalidRequest {
		t.Errorf("code = %q, want %q (msg %q)", e.Code, CodeInvalidRequest, e.Msg)
	}
	if !strings.Contains(e.Msg, want) {
		t.Errorf("msg = %q, want it to contain %q", e.Msg, want)
	}
	checkClientSafe(t, e.Msg)
}

// quotedInput matches the client input that messages echo, quoted.
var quotedInput = regexp.MustCompile(`"(\\.|[^"\\])*"`)

// checkClientSafe fails when msg, apart from the client input it quotes,
// shows Go internals.
func checkClientSafe(t testing.TB, msg string) {
	t.Helper()
	rest := quotedInput.ReplaceAllString(msg, `""`)
	for _, bad := range []string{"svc.", "main.", "json:", "Go value", "Go struct", "float64", "[]svc", "reflect", "interface {}"} {
		if strings.Contains(rest, bad) {
			t.Errorf("msg %q shows internal text %q", msg, bad)
		}
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	task := func(fields string) string { return `{"steps":[{"cmd":"a",` + fields + `}]}` }
	deep := strings.Repeat("[", 100000)
	tests := []struct {
		name, body, want string
	}{
		// The body as a whole.
		{"empty", "", "body: empty"},
		{"whitespace", " \n\t\r ", "body: empty"},
		{"null", "null", `body: expected an object {"steps": [...]} or an array of steps`},
		{"number", "1", "body: expected an object"},
		{"string", `"steps"`, "body: expected an object"},
		{"bool", "true", "body: expected an object"},
		{"truncated", `{"steps":[{"cmd":"a"}`, "body: unexpected end of JSON input"},
		{"truncated legacy", `[{"cmd":"a"}`, "body: unexpected end of JSON input"},
		{"truncated string", `{"steps":[{"cmd":"a`, "body: unexpected end of JSON input"},
		{"trailing garbage", `{"steps":[]}x`, "body: trailing data after the JSON value"},
		{"trailing value", `{"steps":[]} {}`, "body: trailing data after the JSON value"},
		{"trailing brace", `{"steps":[]}}`, "body: trailing data after the JSON value"},
		{"trailing legacy", `[] []`, "body: trailing data after the JSON value"},
		{"trailing comma", `{"steps":[{"cmd":"a",}]}`, "body: invalid JSON at byte 21"},
		{"trailing comma array", `{"steps":[{"cmd":"a"},]}`, "body: invalid JSON at byte"},
		{"missing colon", `{"steps" []}`, "body: invalid JSON at byte"},
		{"bare key", `{steps:[]}`, "body: invalid JSON at byte"},
		{"control char", "{\"steps\":[{\"cmd\":\"a\x01\"}]}", "body: invalid JSON at byte"},
		{"bad escape", `{"steps":[{"cmd":"\q"}]}`, "body: invalid JSON at byte"},
		{"bad number", `{"steps":[],"cache":-}`, "body: invalid JSON at byte"},
		{"invalid utf8", "{\"steps\":[{\"cmd\":\"\xff\"}]}", "body: invalid UTF-8 at byte 18"},
		{"bom", "\ufeff{\"steps\":[]}", "body: invalid JSON at byte"},

		// Envelope.
		{"steps missing", `{}`, "steps: missing"},
		{"steps missing with cache", `{"cache":true}`, "steps: missing"},
		{"steps null", `{"steps":null}`, "steps: expected an array of steps"},
		{"steps object", `{"steps":{"cmd":"a"}}`, "steps: expected an array of steps"},
		{"steps string", `{"steps":"a"}`, "steps: expected an array of steps"},
		{"unknown envelope field", `{"steps":[],"step":[]}`, `body: unknown field "step"`},
		{"case differs", `{"Steps":[]}`, `body: unknown field "Steps"`},
		{"duplicate steps", `{"steps":[],"steps":[]}`, `body: duplicate field "steps"`},
		{"duplicate cache", `{"steps":[],"cache":true,"cache":false}`, `body: duplicate field "cache"`},
		{"cache number", `{"steps":[],"cache":1}`, "cache: expected true or false"},
		{"cache string", `{"steps":[],"cache":"true"}`, "cache: expected true or false"},
		{"cache huge number", `{"steps":[],"cache":1e999}`, "cache: expected true or false"},
		{"stop_on_failure number", `{"steps":[],"stop_on_failure":0}`, "stop_on_failure: expected true or false"},
		{"stop_on_failure object", `{"steps":[],"stop_on_failure":{}}`, "stop_on_failure: expected true or false"},

		// Steps.
		{"step number", `{"steps":[1]}`, "steps[0]: expected a task object or an array of task objects"},
		{"step null", `{"steps":[null]}`, "steps[0]: expected a task object or an array of task objects"},
		{"step string legacy", `["echo"]`, "steps[0]: expected a task object or an array of task objects"},
		{"nested array", `{"steps":[{"cmd":"a"},[{"cmd":"b"},[]]]}`, "steps[1][1]: expected a task object"},
		{"parallel null", `[[null]]`, "steps[0][0]: expected a task object"},
		{"deep nesting", `{"steps":` + deep, "steps[0][0]: expected a task object"},
		{"deep nesting in cmd", `{"steps":[{"cmd":` + deep, "steps[0].cmd: expected a string"},

		// Task fields.
		{"cmd missing", `{"steps":[{}]}`, "steps[0].cmd: missing"},
		{"cmd missing parallel", `[[{"cmd":"a"},{"args":[]}]]`, "steps[0][1].cmd: missing"},
		{"cmd number", `{"steps":[{"cmd":1}]}`, "steps[0].cmd: expected a string"},
		{"cmd null", `{"steps":[{"cmd":null}]}`, "steps[0].cmd: expected a string"},
		{"cmd array", `{"steps":[{"cmd":"a"},{"cmd":"b"},[{"cmd":["x"]}]]}`, "steps[2][0].cmd: expected a string"},
		{"unknown task field", `{"steps":[{"cmd":"a"},{"cmd":"b","cmdd":"c"}]}`, `steps[1]: unknown field "cmdd"`},
		{"task field case", `{"steps":[{"cmd":"a","Cmd":"b"}]}`, `steps[0]: unknown field "Cmd"`},
		{"long unknown field", `{"steps":[{"cmd":"a","` + strings.Repeat("x", 1000) + `":1}]}`, `steps[0]: unknown field "xxxxxxxx`},
		{"unknown field deep value", `{"steps":[{"cmd":"a","x":` + deep, `steps[0]: unknown field "x"`},
		{"duplicate cmd", `{"steps":[{"cmd":"a","cmd":"b"}]}`, `steps[0]: duplicate field "cmd"`},
		{"duplicate escaped", `{"steps":[{"cmd":"a","c\u006dd":"b"}]}`, `steps[0]: duplicate field "cmd"`},
		{"duplicate null", `{"steps":[{"cmd":"a","stdin":null,"stdin":"x"}]}`, `steps[0]: duplicate field "stdin"`},
		{"args string", task(`"args":"x"`), "steps[0].args: expected an array of strings"},
		{"args object", task(`"args":{}`), "steps[0].args: expected an array of strings"},
		{"args element number", task(`"args":["a",1]`), "steps[0].args[1]: expected a string"},
		{"args element null", task(`"args":["a","b",null]`), "steps[0].args[2]: expected a string"},
		{"env array", task(`"env":[]`), "steps[0].env: expected an object of strings"},
		{"env string", task(`"env":"A=1"`), "steps[0].env: expected an object of strings"},
		{"env value number", task(`"env":{"A":1}`), `steps[0].env["A"]: expected a string`},
		{"env value null", task(`"env":{"A":null}`), `steps[0].env["A"]: expected a string`},
		{"env duplicate", task(`"env":{"A":"1","A":"2"}`), `steps[0].env: duplicate key "A"`},
		{"stdin number", task(`"stdin":5`), "steps[0].stdin: expected a string"},
		{"stdin array", task(`"stdin":["a"]`), "steps[0].stdin: expected a string"},
		{"working_dir number", task(`"working_dir":1`), "steps[0].working_dir: expected a string"},
		{"sandbox_profile bool", task(`"sandbox_profile":true`), "steps[0].sandbox_profile: expected a string"},
		{"task cache string", task(`"cache":"yes"`), "steps[0].cache: expected true or false"},
		{"task cache number", task(`"cache":1`), "steps[0].cache: expected true or false"},
		{"files string", task(`"files":"x"`), "steps[0].files: expected an object"},
		{"files array", task(`"files":[]`), "steps[0].files: expected an object"},
		{"file number", task(`"files":{"a.c":1}`), `steps[0].files["a.c"]: expected a string or an object {"file_id": ...}`},
		{"file null", task(`"files":{"a.c":null}`), `steps[0].files["a.c"]: expected a string or an object {"file_id": ...}`},
		{"file array", task(`"files":{"a.c":["x"]}`), `steps[0].files["a.c"]: expected a string or an object {"file_id": ...}`},
		{"file duplicate", task(`"files":{"a":"x","a":"y"}`), `steps[0].files: duplicate key "a"`},
		{"file_id missing", task(`"files":{"a.c":{}}`), `steps[0].files["a.c"].file_id: missing`},
		{"file_id number", task(`"files":{"a.c":{"file_id":5}}`), `steps[0].files["a.c"].file_id: expected a string`},
		{"file_id null", task(`"files":{"a.c":{"file_id":null}}`), `steps[0].files["a.c"].file_id: expected a string`},
		{"file_id empty", task(`"files":{"a.c":{"file_id":""}}`), `steps[0].files["a.c"].file_id: expected 64 lowercase hex characters`},
		{"file_id short", task(`"files":{"a.c":{"file_id":"abc"}}`), `steps[0].files["a.c"].file_id: expected 64 lowercase hex characters`},
		{"file_id upper", task(`"files":{"a.c":{"file_id":"` + strings.ToUpper(testFileID) + `"}}`), `.file_id: expected 64 lowercase hex characters`},
		{"file unknown field", task(`"files":{"a.c":{"file_id":"` + testFileID + `","size":1}}`), `steps[0].files["a.c"]: unknown field "size"`},
		{"file content field", task(`"files":{"a.c":{"content":"x"}}`), `steps[0].files["a.c"]: unknown field "content"`},
		{"file_id duplicate", task(`"files":{"a.c":{"file_id":"` + testFileID + `","file_id":"` + testFileID + `"}}`), `steps[0].files["a.c"]: duplicate field "file_id"`},
		{"file key quoted", task(`"files":{"a\"b\n":1}`), `steps[0].files["a\"b\n"]: expected a string`},
		{"parallel task error", `[{"cmd":"a"},[{"cmd":"b"},{"cmd":"c","env":{"X":true}}]]`, `steps[1][1].env["X"]: expected a string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := DecodeRequest(strings.NewReader(tt.body))
			if err == nil {
				t.Fatalf("DecodeRequest(%.80q) = %+v, want error %q", tt.body, req, tt.want)
			}
			if req != nil {
				t.Errorf("request is not nil on error")
			}
			wantInvalid(t, err, tt.want)
		})
	}
}

func TestDecodeRequestLongKeyShortened(t *testing.T) {
	body := `{"steps":[{"cmd":"a","files":{"` + strings.Repeat("é", 1000) + `":1}}]}`
	_, err := DecodeRequest(strings.NewReader(body))
	wantInvalid(t, err, `"...]: expected a string`)
	if n := len(err.(*Error).Msg); n > 200 {
		t.Errorf("message is %d bytes long", n)
	}
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

func TestDecodeRequestReadError(t *testing.T) {
	cause := errors.New("connection reset by peer")
	_, err := DecodeRequest(io.MultiReader(strings.NewReader(`{"steps":[`), failingReader{cause}))
	wantInvalid(t, err, "body: could not be read")
	if !errors.Is(err, cause) {
		t.Errorf("error %v does not wrap the read error", err)
	}
	if strings.Contains(err.(*Error).Msg, "connection") {
		t.Errorf("client message shows the cause: %q", err.(*Error).Msg)
	}

	// A body over an http.MaxBytesReader limit is detectable by the caller,
	// even when the JSON value itself ended before the limit.
	body := `{"steps":[{"cmd":"a"}]}` + strings.Repeat(" ", 100)
	rd := http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(strings.NewReader(body)), 50)
	_, err = DecodeRequest(rd)
	var mbe *http.MaxBytesError
	if !errors.As(err, &mbe) {
		t.Fatalf("error %v: want an *http.MaxBytesError in the chain", err)
	}
	wantInvalid(t, err, "body: could not be read")
}

func TestDecodeRequest(t *testing.T) {
	tests := []struct {
		name, body string
		want       *Request
	}{
		{"minimal", `{"steps":[{"cmd":"true"}]}`,
			&Request{Steps: []Step{Single(Task{Cmd: "true"})}}},
		{"empty steps", `{"steps":[]}`, &Request{Steps: []Step{}}},
		{"envelope flags", `{"stop_on_failure":true,"steps":[{"cmd":"a"}],"cache":true}`,
			&Request{Steps: []Step{Single(Task{Cmd: "a"})}, Cache: true, StopOnFailure: true}},
		{"envelope flags false", `{"steps":[{"cmd":"a"}],"cache":false,"stop_on_failure":false}`,
			&Request{Steps: []Step{Single(Task{Cmd: "a"})}}},
		{"envelope nulls", `{"steps":[{"cmd":"a"}],"cache":null,"stop_on_failure":null}`,
			&Request{Steps: []Step{Single(Task{Cmd: "a"})}}},
		{"legacy", `[{"cmd":"a"},[{"cmd":"b"},{"cmd":"c"}]]`,
			&Request{Legacy: true, Steps: []Step{
				Single(Task{Cmd: "a"}),
				Parallel(Task{Cmd: "b"}, Task{Cmd: "c"}),
			}}},
		{"legacy empty", `[]`, &Request{Legacy: true, Steps: []Step{}}},
		{"parallel of one", `{"steps":[[{"cmd":"a"}]]}`,
			&Request{Steps: []Step{Parallel(Task{Cmd: "a"})}}},
		{"empty parallel step", `{"steps":[[]]}`,
			&Request{Steps: []Step{{Parallel: true}}}},
		{"whitespace around", " \n\t{ \"steps\" : [ { \"cmd\" : \"a\" } ] }\r\n ",
			&Request{Steps: []Step{Single(Task{Cmd: "a"})}}},
		{"every field", `{"steps":[{
			"cmd":"gcc","args":["-O2","main.c"],"env":{"LANG":"C","_X1":""},
			"stdin":"in\n","files":{"main.c":"int main(){}","lib/x.o":{"file_id":"` + testFileID + `"}},
			"working_dir":"/svc/src","sandbox_profile":"compile_v2","cache":false}]}`,
			&Request{Steps: []Step{Single(Task{
				Cmd: "gcc", Args: []string{"-O2", "main.c"},
				Env:   map[string]string{"LANG": "C", "_X1": ""},
				Stdin: "in\n",
				Files: map[string]File{
					"main.c":  {Content: "int main(){}"},
					"lib/x.o": {FileID: testFileID},
				},
				WorkingDir: "/svc/src", SandboxProfile: ProfileCompileV2, Cache: boolPtr(false),
			})}}},
		{"optional nulls", `{"steps":[{"cmd":"a","args":null,"env":null,"stdin":null,"files":null,
			"working_dir":null,"sandbox_profile":null,"cache":null}]}`,
			&Request{Steps: []Step{Single(Task{Cmd: "a"})}}},
		{"empty collections are nil", `{"steps":[{"cmd":"a","args":[],"env":{},"files":{}}]}`,
			&Request{Steps: []Step{Single(Task{Cmd: "a"})}}},
		{"empty strings", `{"steps":[{"cmd":"","args":[""],"files":{"":""}}]}`,
			&Request{Steps: []Step{Single(Task{Cmd: "", Args: []string{""}, Files: map[string]File{"": {}}})}}},
		{"unicode and escapes", `{"steps":[{"cmd":"\u00e9cho","args":["日本語","\ud83d\ude00","a\u0000b"],"stdin":"\"\\\/\b\f\n\r\t"}]}`,
			&Request{Steps: []Step{Single(Task{Cmd: "écho", Args: []string{"日本語", "😀", "a\x00b"}, Stdin: "\"\\/\b\f\n\r\t"})}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeRequest(strings.NewReader(tt.body))
			if err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

// roundTrip checks that req survives json.Marshal and DecodeRequest, in the
// envelope form and as a legacy bare array of steps.
func roundTrip(t testing.TB, req *Request) {
	t.Helper()
	env := *req
	env.Legacy = false
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	got, err := DecodeRequest(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("DecodeRequest(%s): %v", b, err)
	}
	if !reflect.DeepEqual(got, &env) {
		t.Fatalf("round trip of %s:\ngot  %#v\nwant %#v", b, got, &env)
	}

	b, err = json.Marshal(req.Steps)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	got, err = DecodeRequest(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("DecodeRequest(%s): %v", b, err)
	}
	want := &Request{Steps: req.Steps, Legacy: true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("legacy round trip of %s:\ngot  %#v\nwant %#v", b, got, want)
	}
}

func TestDecodeRequestRoundTrip(t *testing.T) {
	bodies := []string{
		`{"steps":[{"cmd":"true"}]}`,
		`{"steps":[{"cmd":"a"},[{"cmd":"b"}],[{"cmd":"c","cache":true},{"cmd":"d","cache":false}]],"cache":true,"stop_on_failure":true}`,
		`{"steps":[{"cmd":"gcc","args":["-o","m","m.c",""],"env":{"A":"1","B":""},"stdin":"x\u0000y",
			"files":{"m.c":"int main(){}","d/b.bin":{"file_id":"` + testFileID + `"},"empty":""},
			"working_dir":"/tmp","sandbox_profile":"native_v1"}]}`,
		`[{"cmd":"日本語","args":["\ud83d\ude00","<>&\u2028"]}]`,
	}
	for _, body := range bodies {
		req, err := DecodeRequest(strings.NewReader(body))
		if err != nil {
			t.Fatalf("DecodeRequest(%s): %v", body, err)
		}
		roundTrip(t, req)
	}
}

func TestDecodeResponse(t *testing.T) {
	res := Result{Outcome: OutcomeExited, ExitCode: 1, Stdout: "out", Stats: Stats{WallTimeMs: 3}}
	notRun := Result{Outcome: OutcomeNotStarted, Error: "stop_on_failure"}
	resp := &Response{
		Results: []StepResult{{Results: []Result{res}}, {Results: []Result{res, notRun}, Parallel: true}},
		Cache:   CacheSummary{Enabled: true, ReplayedSteps: 1, StoredSteps: 2},
	}
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeResponse(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("DecodeResponse(%s): %v", b, err)
	}
	if !reflect.DeepEqual(got, resp) {
		t.Errorf("envelope:\ngot  %#v\nwant %#v", got, resp)
	}

	resp.Legacy, resp.Cache = true, CacheSummary{}
	b, err = json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != '[' {
		t.Fatalf("legacy response marshals as %s", b)
	}
	got, err = DecodeResponse(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("DecodeResponse(%s): %v", b, err)
	}
	if !reflect.DeepEqual(got, resp) {
		t.Errorf("legacy:\ngot  %#v\nwant %#v", got, resp)
	}

	// Unknown fields are ignored.
	got, err = DecodeResponse(strings.NewReader(`{"results":[],"cache":{"enabled":false},"new_field":1}`))
	if err != nil || got.Legacy || len(got.Results) != 0 {
		t.Errorf("unknown field: got %+v, %v", got, err)
	}

	// Error bodies become *Error.
	_, err = DecodeResponse(strings.NewReader(`{"error":"steps[0].cmd: missing","code":"invalid_request"}`))
	if e, ok := err.(*Error); !ok || e.Code != CodeInvalidRequest || e.Msg != "steps[0].cmd: missing" {
		t.Errorf("error body: got %#v", err)
	}
	_, err = DecodeResponse(strings.NewReader(`{"error":"x","code":"brand_new"}`))
	if CodeOf(err) != CodeInternalError {
		t.Errorf("unknown code: got %v, code %q", err, CodeOf(err))
	}

	for _, body := range []string{"", "null", "1", `{"cache":{}}`, `{"results":{}}`, `[`, `{"results":[1]}`} {
		if got, err := DecodeResponse(strings.NewReader(body)); err == nil {
			t.Errorf("DecodeResponse(%q) = %+v, want error", body, got)
		}
	}
}

func FuzzDecodeExecute(f *testing.F) {
	seeds := []string{
		``, `null`, `{}`, `[]`, `[[]]`, `{"steps":[]}`,
		`{"steps":[{"cmd":"true"}]}`,
		`{"steps":[{"cmd":"a"},[{"cmd":"b"},{"cmd":"c"}]],"cache":true,"stop_on_failure":false}`,
		`[{"cmd":"a","args":["x"],"env":{"A":"b"},"stdin":"in","working_dir":"/svc/./x/","sandbox_profile":"native_v2","cache":true}]`,
		`{"steps":[{"cmd":"a","files":{"a//b":"x","./c":{"file_id":"` + testFileID + `"}}}]}`,
		`{"steps":[{"cmd":"a","files":{"../x":"y"}}]}`,
		`{"steps":[{"cmd":"a","files":{"a":"x","a/b":"y"}}]}`,
		`{"steps":[{"cmd":"a","sandbox_profile":"compile_v1"}]}`,
		`{"steps":[{"cmd":"a","sandbox_profile":"nope"}]}`,
		`{"steps":[{"cmd":"a","env":{"1A":"x"}}]}`,
		`{"steps":[{"cmd":"a","cmd":"b"}]}`,
		`{"steps":[{"cmd":"a","cmdd":"b"}]}`,
		`{"steps":[{"cmd":"a"}]} x`,
		`{"steps":[{"cmd":"\u0000"}]}`,
		`{"steps":[{"cmd":1e999}]}`,
		`{"steps":[[[[[[[[[[`,
		`[[{"cmd":"a"},{"cmd":"a"},{"cmd":"a"},{"cmd":"a"},{"cmd":"a"},{"cmd":"a"},{"cmd":"a"},{"cmd":"a"},{"cmd":"a"}]]`,
		"{\"steps\":[{\"cmd\":\"\xff\"}]}",
		`{"steps":[{"cmd":"a","limits":{"wall_timeout_ms":1,"cpu_time_limit_ms":5000,"memory_max_bytes":4194304,"pids_max":1,"output_limit_bytes":1}}]}`,
		`{"steps":[{"cmd":"a","limits":{"pids_max":-0,"memory_max_bytes":1e9,"x":null}}]}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeRequest(strings.NewReader(string(body)))
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidRequest || e.Msg == "" {
				t.Fatalf("DecodeRequest error %#v: want an *Error with code invalid_request", err)
			}
			checkClientSafe(t, e.Msg)
			return
		}
		if !json.Valid(body) {
			t.Fatalf("DecodeRequest accepted invalid JSON %q", body)
		}
		err = req.Validate(DefaultLimits(), Profiles())
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Validate error %#v is not an *Error", err)
			}
			switch e.Code {
			case CodeInvalidRequest, CodeLimitsExceeded, CodeProfileNotAllowed:
			default:
				t.Fatalf("Validate error code %q is not a 4xx code (msg %q)", e.Code, e.Msg)
			}
			checkClientSafe(t, e.Msg)
			return
		}
		// A valid request is in normal form: it survives encoding and
		// decoding, and validating it again changes nothing.
		again, err := DecodeRequest(strings.NewReader(mustMarshal(t, req)))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if err := again.Validate(DefaultLimits(), Profiles()); err != nil {
			t.Fatalf("re-validate: %v", err)
		}
		again.Legacy = req.Legacy
		if !reflect.DeepEqual(again, req) {
			t.Fatalf("round trip:\ngot  %#v\nwant %#v", again, req)
		}
	})
}

func mustMarshal(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	return string(b)
}
