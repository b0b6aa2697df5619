package svc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DecodeRequest reads one execute request from r: the envelope
//
//	{"steps": [...], "cache": bool, "stop_on_failure": bool}
//
// or a legacy bare array of steps, which sets [Request.Legacy]. A step is a
// task object or an array of task objects (a parallel step).
//
// Decoding is strict. It rejects an empty body, a body that is not UTF-8,
// invalid JSON, trailing data after the JSON value, unknown and duplicate
// fields at every level, and values of the wrong type (booleans must be
// true or false). null is accepted only for optional fields and means the
// field is absent; where a value is required (cmd, steps, the elements of
// arrays, the values of env and files, file_id) null is rejected. Empty
// args, env and files decode as nil.
//
// Every error is an *[Error] with code [CodeInvalidRequest] whose Msg names
// the place of the problem and is safe to show to the client, for example
//
//	steps[2][0].cmd: expected a string
//	steps[0].files["a.c"]: expected a string or an object {"file_id": ...}
//	steps[1]: unknown field "cmdd"
//	steps[0].limits.pids_max: must be positive, got 0
//	steps: missing
//	body: trailing data after the JSON value
//
// When reading r fails, the read error is the error's cause (Err), so a
// caller finds an *http.MaxBytesError with errors.As and may answer
// payload_too_large instead.
//
// DecodeRequest checks types and shape only; [Request.Validate] checks
// values against limits and allowed profiles.
func DecodeRequest(r io.Reader) (*Request, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, newError(CodeInvalidRequest, "body: could not be read", err)
	}
	if len(bytes.TrimLeft(body, " \t\r\n")) == 0 {
		return nil, fieldErr("body", "empty")
	}
	if !utf8.Valid(body) {
		return nil, fieldErr("body", fmt.Sprintf("invalid UTF-8 at byte %d (JSON text must be UTF-8)", firstInvalidUTF8(body)))
	}
	d := &requestDecoder{dec: json.NewDecoder(bytes.NewReader(body))}
	d.dec.UseNumber() // numbers stay text: no conversion errors naming Go types
	req, err := d.request()
	if err != nil {
		return nil, err
	}
	if _, err := d.dec.Token(); err != io.EOF {
		return nil, fieldErr("body", "trailing data after the JSON value")
	}
	return req, nil
}

// firstInvalidUTF8 returns the offset of the first byte of b that does not
// start a valid UTF-8 sequence.
func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// requestDecoder walks the token stream of one request. Each method reads
// exactly one value. It holds no recursion: the shape of a request has a
// fixed depth, and a value of an unexpected kind is rejected at its first
// token, before anything nested in it is read.
type requestDecoder struct {
	dec *json.Decoder
}

// token returns the next token; a syntax error names the byte offset.
func (d *requestDecoder) token() (json.Token, error) {
	t, err := d.dec.Token()
	if err == nil {
		return t, nil
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return nil, fieldErr("body", fmt.Sprintf("invalid JSON at byte %d: %s", se.Offset, se.Error()))
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return nil, fieldErr("body", "unexpected end of JSON input")
	}
	return nil, newError(CodeInvalidRequest, "body: invalid JSON", err)
}

// key returns the next key of an object, or ok false at its closing brace,
// which it consumes.
func (d *requestDecoder) key() (k string, ok bool, err error) {
	t, err := d.token()
	if err != nil {
		return "", false, err
	}
	switch t := t.(type) {
	case string:
		return t, true, nil
	case json.Delim:
		if t == '}' {
			return "", false, nil
		}
	}
	// Not reached: the decoder allows only a key string or '}' here.
	return "", false, fieldErr("body", "invalid JSON: expected an object key")
}

// next reports whether the array being read has another element; if not,
// it consumes the closing bracket.
func (d *requestDecoder) next() (bool, error) {
	if d.dec.More() {
		return true, nil
	}
	t, err := d.token()
	if err != nil {
		return false, err
	}
	if t != json.Delim(']') {
		// Not reached: More reports false only before ']', '}' or an error.
		return false, fieldErr("body", "invalid JSON: expected ']'")
	}
	return false, nil
}

// fieldSet records the fields seen in one object to reject duplicates.
type fieldSet []string

func (s *fieldSet) add(path, k string) error {
	for _, f := range *s {
		if f == k {
			return fieldErr(path, "duplicate field "+quoteForMsg(k))
		}
	}
	*s = append(*s, k)
	return nil
}

func (s fieldSet) has(k string) bool {
	for _, f := range s {
		if f == k {
			return true
		}
	}
	return false
}

const (
	msgEnvelope = `expected an object {"steps": [...]} or an array of steps`
	msgSteps    = "expected an array of steps"
	msgStep     = "expected a task object or an array of task objects"
	msgTask     = "expected a task object"
	msgString   = "expected a string"
	msgBool     = "expected true or false"
	msgStrings  = "expected an array of strings"
	msgEnv      = "expected an object of strings"
	msgFiles    = "expected an object"
	msgFile     = `expected a string or an object {"file_id": ...}`
	msgFileID   = "expected 64 lowercase hex characters"
	msgLimits   = "expected an object of limits"
	msgPositive = "expected a positive integer"
)

func (d *requestDecoder) request() (*Request, error) {
	t, err := d.token()
	if err != nil {
		return nil, err
	}
	req := &Request{}
	switch t {
	case json.Delim('['):
		req.Legacy = true
		if req.Steps, err = d.stepsAfterOpen("steps"); err != nil {
			return nil, err
		}
		return req, nil
	case json.Delim('{'):
	default:
		return nil, fieldErr("body", msgEnvelope)
	}
	var seen fieldSet
	for {
		k, ok, err := d.key()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		switch k {
		case "steps", "cache", "stop_on_failure":
		default:
			return nil, fieldErr("body", "unknown field "+quoteForMsg(k))
		}
		if err := seen.add("body", k); err != nil {
			return nil, err
		}
		switch k {
		case "steps":
			req.Steps, err = d.steps(k)
		case "cache":
			err = d.optBool(k, &req.Cache)
		case "stop_on_failure":
			err = d.optBool(k, &req.StopOnFailure)
		}
		if err != nil {
			return nil, err
		}
	}
	if !seen.has("steps") {
		return nil, fieldErr("steps", "missing")
	}
	return req, nil
}

// steps reads the required array of steps.
func (d *requestDecoder) steps(path string) ([]Step, error) {
	t, err := d.token()
	if err != nil {
		return nil, err
	}
	if t != json.Delim('[') {
		return nil, fieldErr(path, msgSteps)
	}
	return d.stepsAfterOpen(path)
}

func (d *requestDecoder) stepsAfterOpen(path string) ([]Step, error) {
	steps := []Step{}
	for i := 0; ; i++ {
		more, err := d.next()
		if err != nil {
			return nil, err
		}
		if !more {
			return steps, nil
		}
		s, err := d.step(indexPath(path, i))
		if err != nil {
			return nil, err
		}
		steps = append(steps, s)
	}
}

// step reads a task object or an array of task objects.
func (d *requestDecoder) step(path string) (Step, error) {
	t, err := d.token()
	if err != nil {
		return Step{}, err
	}
	switch t {
	case json.Delim('{'):
		task, err := d.taskAfterOpen(path)
		if err != nil {
			return Step{}, err
		}
		return Single(task), nil
	case json.Delim('['):
	default:
		return Step{}, fieldErr(path, msgStep)
	}
	s := Step{Parallel: true}
	for j := 0; ; j++ {
		more, err := d.next()
		if err != nil {
			return Step{}, err
		}
		if !more {
			return s, nil
		}
		tp := indexPath(path, j)
		t, err := d.token()
		if err != nil {
			return Step{}, err
		}
		if t != json.Delim('{') {
			return Step{}, fieldErr(tp, msgTask)
		}
		task, err := d.taskAfterOpen(tp)
		if err != nil {
			return Step{}, err
		}
		s.Tasks = append(s.Tasks, task)
	}
}

// taskAfterOpen reads the fields of a task object whose '{' was read.
func (d *requestDecoder) taskAfterOpen(path string) (Task, error) {
	var t Task
	var seen fieldSet
	for {
		k, ok, err := d.key()
		if err != nil {
			return Task{}, err
		}
		if !ok {
			break
		}
		switch k {
		case "cmd", "args", "env", "stdin", "files", "working_dir", "sandbox_profile", "cache":
		case "limits", "outputs", "stdin_from", "stdin_path", "stdout_path", "stderr_path":
		default:
			return Task{}, fieldErr(path, "unknown field "+quoteForMsg(k))
		}
		if err := seen.add(path, k); err != nil {
			return Task{}, err
		}
		fp := path + "." + k
		switch k {
		case "cmd":
			t.Cmd, err = d.str(fp)
		case "args":
			t.Args, err = d.strings(fp)
		case "env":
			t.Env, err = d.env(fp)
		case "stdin":
			err = d.optStr(fp, &t.Stdin)
		case "files":
			t.Files, err = d.files(fp)
		case "working_dir":
			err = d.optStr(fp, &t.WorkingDir)
		case "sandbox_profile":
			var p string
			err = d.optStr(fp, &p)
			t.SandboxProfile = Profile(p)
		case "cache":
			t.Cache, err = d.optBoolPtr(fp)
		case "limits":
			t.Limits, err = d.taskLimits(fp)
		case "outputs":
			t.Outputs, err = d.strings(fp)
		case "stdin_from":
			t.StdinFrom, err = d.optIndex(fp)
		case "stdin_path":
			err = d.optStr(fp, &t.StdinPath)
		case "stdout_path":
			err = d.optStr(fp, &t.StdoutPath)
		case "stderr_path":
			err = d.optStr(fp, &t.StderrPath)
		}
		if err != nil {
			return Task{}, err
		}
	}
	if !seen.has("cmd") {
		return Task{}, fieldErr(path+".cmd", "missing")
	}
	return t, nil
}

// str reads a required string.
func (d *requestDecoder) str(path string) (string, error) {
	t, err := d.token()
	if err != nil {
		return "", err
	}
	s, ok := t.(string)
	if !ok {
		return "", fieldErr(path, msgString)
	}
	return s, nil
}

// optStr reads an optional string; null leaves *v unchanged.
func (d *requestDecoder) optStr(path string, v *string) error {
	t, err := d.token()
	if err != nil {
		return err
	}
	switch t := t.(type) {
	case nil:
	case string:
		*v = t
	default:
		return fieldErr(path, msgString)
	}
	return nil
}

// optBool reads an optional boolean; null leaves *v unchanged.
func (d *requestDecoder) optBool(path string, v *bool) error {
	t, err := d.token()
	if err != nil {
		return err
	}
	switch t := t.(type) {
	case nil:
	case bool:
		*v = t
	default:
		return fieldErr(path, msgBool)
	}
	return nil
}

// optBoolPtr reads an optional boolean; null is nil.
func (d *requestDecoder) optBoolPtr(path string) (*bool, error) {
	t, err := d.token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case nil:
		return nil, nil
	case bool:
		return &t, nil
	}
	return nil, fieldErr(path, msgBool)
}

// optIndex reads an optional array index: an integer; null is nil.
// Whether it is in range is Validate's to say.
func (d *requestDecoder) optIndex(path string) (*int, error) {
	t, err := d.token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case nil:
		return nil, nil
	case json.Number:
		if i, err := strconv.Atoi(t.String()); err == nil {
			return &i, nil
		}
	}
	return nil, fieldErr(path, "expected the index of a task of the step (an integer)")
}

// openOpt reads the opening delimiter of an optional array or object. It
// returns false for null, and an error with msg for any other value.
func (d *requestDecoder) openOpt(path string, open json.Delim, msg string) (bool, error) {
	t, err := d.token()
	if err != nil {
		return false, err
	}
	switch t {
	case nil:
		return false, nil
	case open:
		return true, nil
	}
	return false, fieldErr(path, msg)
}

// strings reads an optional array of strings.
func (d *requestDecoder) strings(path string) ([]string, error) {
	if ok, err := d.openOpt(path, '[', msgStrings); !ok {
		return nil, err
	}
	var out []string
	for i := 0; ; i++ {
		more, err := d.next()
		if err != nil {
			return nil, err
		}
		if !more {
			return out, nil
		}
		s, err := d.str(indexPath(path, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
}

// env reads an optional object of strings.
func (d *requestDecoder) env(path string) (map[string]string, error) {
	return decodeObject(d, path, msgEnv, d.str)
}

// files reads an optional object of files.
func (d *requestDecoder) files(path string) (map[string]File, error) {
	return decodeObject(d, path, msgFiles, d.file)
}

// decodeObject reads an optional object whose values value decodes,
// refusing duplicate keys.
func decodeObject[V any](d *requestDecoder, path, msg string, value func(path string) (V, error)) (map[string]V, error) {
	if ok, err := d.openOpt(path, '{', msg); !ok {
		return nil, err
	}
	var out map[string]V
	for {
		k, ok, err := d.key()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		if _, dup := out[k]; dup {
			return nil, fieldErr(path, "duplicate key "+quoteForMsg(k))
		}
		v, err := value(keyPath(path, k))
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = make(map[string]V)
		}
		out[k] = v
	}
}

// file reads a file value: an inline string or {"file_id": "<hex64>"}.
func (d *requestDecoder) file(path string) (File, error) {
	t, err := d.token()
	if err != nil {
		return File{}, err
	}
	if s, ok := t.(string); ok {
		return File{Content: s}, nil
	}
	if t != json.Delim('{') {
		return File{}, fieldErr(path, msgFile)
	}
	var f File
	var seen fieldSet
	for {
		k, ok, err := d.key()
		if err != nil {
			return File{}, err
		}
		if !ok {
			break
		}
		if k != "file_id" {
			return File{}, fieldErr(path, "unknown field "+quoteForMsg(k))
		}
		if err := seen.add(path, k); err != nil {
			return File{}, err
		}
		fp := path + ".file_id"
		if f.FileID, err = d.str(fp); err != nil {
			return File{}, err
		}
		// An empty file_id could not be told from empty inline content,
		// so the format is checked here as well as in Validate.
		if !isFileIDHex(f.FileID) {
			return File{}, fieldErr(fp, msgFileID)
		}
	}
	if !seen.has("file_id") {
		return File{}, fieldErr(path+".file_id", "missing")
	}
	return f, nil
}

// taskLimits reads an optional object of per-task limits (TaskLimits),
// each an optional positive integer literal: null is the service's value,
// as an absent field is, and so are null and {} for the whole object.
func (d *requestDecoder) taskLimits(path string) (TaskLimits, error) {
	var l TaskLimits
	if ok, err := d.openOpt(path, '{', msgLimits); !ok {
		return l, err
	}
	var seen fieldSet
	for {
		k, ok, err := d.key()
		if err != nil {
			return TaskLimits{}, err
		}
		if !ok {
			return l, nil
		}
		f, known := l.field(k)
		if !known {
			return TaskLimits{}, fieldErr(path, "unknown field "+quoteForMsg(k))
		}
		if err := seen.add(path, k); err != nil {
			return TaskLimits{}, err
		}
		if *f.v, err = d.positive(path+"."+k, f.unit); err != nil {
			return TaskLimits{}, err
		}
	}
}

// positive reads an optional positive integer literal (no fraction, no
// exponent) and returns it times unit; null is 0.
func (d *requestDecoder) positive(path string, unit int64) (int64, error) {
	t, err := d.token()
	if err != nil {
		return 0, err
	}
	var lit string
	switch t := t.(type) {
	case nil:
		return 0, nil
	case json.Number:
		lit = string(t)
	default:
		return 0, fieldErr(path, msgPositive)
	}
	shown := lit // a number is ASCII
	if len(shown) > maxQuotedLen {
		shown = shown[:maxQuotedLen] + "..."
	}
	if strings.ContainsAny(lit, ".eE") {
		return 0, fieldErr(path, "expected an integer literal (no fraction or exponent), got "+shown)
	}
	n, err := strconv.ParseInt(lit, 10, 64)
	switch {
	case lit[0] == '-' || err == nil && n == 0:
		return 0, fieldErr(path, "must be positive, got "+shown)
	case err != nil || n > math.MaxInt64/unit:
		// A positive integer too large to hold is above any service's
		// value: the most that can be held stands for it, and Validate
		// answers limits_exceeded as for any value above the service's.
		return math.MaxInt64 / unit * unit, nil
	}
	return n * unit, nil
}

// DecodeResponse reads an execute response: the envelope
// {"results": [...], "cache": {...}} or a legacy bare array of step results,
// which sets [Response.Legacy]. Unknown fields are ignored so that clients
// keep working against newer servers. An error body {"error": ..., "code":
// ...} is returned as an *[Error] with that code (internal_error for a code
// this library does not know) and message.
func DecodeResponse(r io.Reader) (*Response, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("svc: read response: %w", err)
	}
	body = bytes.TrimSpace(body)
	resp := &Response{}
	switch {
	case len(body) == 0:
		return nil, errors.New("svc: decode response: empty body")
	case body[0] == '[':
		resp.Legacy = true
		if err := json.Unmarshal(body, &resp.Results); err != nil {
			return nil, fmt.Errorf("svc: decode response: %w", err)
		}
		return resp, nil
	case body[0] != '{':
		return nil, errors.New("svc: decode response: expected an object or an array")
	}
	var v struct {
		Results *[]StepResult `json:"results"`
		Cache   CacheSummary  `json:"cache"`
		Error   *string       `json:"error"`
		Code    *Code         `json:"code"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("svc: decode response: %w", err)
	}
	if v.Results == nil {
		if v.Code != nil && v.Error != nil {
			c := CodeInternalError
			for _, k := range Codes() {
				if k == *v.Code {
					c = k
				}
			}
			return nil, &Error{Code: c, Msg: *v.Error}
		}
		return nil, errors.New(`svc: decode response: no "results"`)
	}
	resp.Results, resp.Cache = *v.Results, v.Cache
	return resp, nil
}
