package svc

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits on workspace file paths (Linux NAME_MAX and PATH_MAX).
const (
	maxPathComponent = 255
	maxPathLen       = 4096
)

// Validate checks a decoded or hand-built request against lim and the
// allowed profiles, before anything runs. Zero fields of lim take their
// defaults (see [Limits]). allowed is the complete list of profiles tasks
// may name; a task that names none ("") always passes, and the service's
// default profile applies to it.
//
// It walks the request in order and returns the first problem as an
// *[Error] whose Msg names the field, for example
// `steps[2][0].files["../x"]: path escapes the workspace`:
//
//   - [CodeInvalidRequest] for a malformed value: no steps, an empty
//     step, an empty or NUL-containing cmd, a NUL in args, a bad env name or
//     a NUL in an env value, a bad file path, a file_id that is not 64
//     lowercase hex characters, a working_dir that is not absolute, an
//     unknown sandbox_profile, more than [MaxOutputs] outputs, a bad
//     output path or two with one normal form, or a stdin_from outside a
//     parallel step, with a non-empty stdin or a stdin_path, not naming
//     another task of the step, or naming a task that feeds another
//     already or writes its stdout to a stdout_path; a bad stdin_path,
//     stdout_path or stderr_path (as a Files key), a stdin_path with a
//     non-empty stdin, an output path naming the stdin_path, or two
//     tasks of a step writing one output file;
//   - [CodeLimitsExceeded] for more steps than lim.MaxSteps, a step with
//     more tasks than lim.MaxParallelTasks, or a task's Limits above
//     lim's (a negative one is invalid_request);
//   - [CodeProfileNotAllowed] for a known profile that is not in allowed.
//
// Validate normalizes in place: the keys of Task.Files become path.Clean
// forms ("./a//b" is "a/b"; two keys of one task that name the same path
// are invalid, and so is a file that another path of the task needs as a
// directory), and Task.WorkingDir becomes its path.Clean form. A new map
// replaces Task.Files when a key changes; the caller's map is not modified.
// The paths of Task.Outputs become clean forms the same way, in a new
// slice when one changes, and so do StdinPath, StdoutPath and StderrPath.
// Strings may hold any valid UTF-8.
//
// Validate is not safe to call concurrently on the same Request.
func (r *Request) Validate(lim Limits, allowed []Profile) error {
	if r == nil || len(r.Steps) == 0 {
		return newError(CodeInvalidRequest, "steps: empty", nil)
	}
	lim = lim.withDefaults()
	if n := len(r.Steps); n > lim.MaxSteps {
		return newError(CodeLimitsExceeded,
			fmt.Sprintf("steps: %d steps; at most %d are allowed", n, lim.MaxSteps), nil)
	}
	for i := range r.Steps {
		s := &r.Steps[i]
		sp := indexPath("steps", i)
		switch n := len(s.Tasks); {
		case n == 0 && s.Parallel:
			return fieldErr(sp, "empty parallel step")
		case n == 0:
			return fieldErr(sp, "step has no task")
		case n > lim.MaxParallelTasks:
			return newError(CodeLimitsExceeded,
				fmt.Sprintf("%s: %d parallel tasks; at most %d are allowed", sp, n, lim.MaxParallelTasks), nil)
		}
		for j := range s.Tasks {
			if err := validateTask(taskPath(sp, *s, j), &s.Tasks[j], allowed); err != nil {
				return err
			}
			if err := s.Tasks[j].Limits.validate(taskPath(sp, *s, j), lim); err != nil {
				return err
			}
		}
		if err := validatePipes(sp, *s); err != nil {
			return err
		}
		if err := validateStreamFiles(sp, *s); err != nil {
			return err
		}
	}
	return nil
}

// validatePipes checks the stdin_from of the tasks of the step s at sp
// (API.md, Interactive tasks): only in a parallel step, not with a
// non-empty stdin, naming another task of the step, and no task feeding
// two.
func validatePipes(sp string, s Step) error {
	var fed map[int]int // producer -> its consumer
	for j, t := range s.Tasks {
		if t.StdinFrom == nil {
			continue
		}
		p, k := taskPath(sp, s, j)+".stdin_from", *t.StdinFrom
		switch {
		case !s.array():
			return fieldErr(p, "only in a parallel step")
		case t.Stdin != "":
			return fieldErr(p, "not together with a non-empty stdin")
		case t.StdinPath != "":
			return fieldErr(p, "not together with stdin_path")
		case k == j:
			return fieldErr(p, "a task cannot feed itself")
		case k < 0 || k >= len(s.Tasks):
			return fieldErr(p, fmt.Sprintf("%d is not a task of the step (0 to %d)", k, len(s.Tasks)-1))
		}
		if s.Tasks[k].StdoutPath != "" {
			return fieldErr(p, fmt.Sprintf("%s writes its stdout to stdout_path; it cannot feed a task", taskPath(sp, s, k)))
		}
		if prev, ok := fed[k]; ok {
			return fieldErr(p, fmt.Sprintf("task %d feeds %s already; a task feeds one task at most", k, taskPath(sp, s, prev)))
		}
		if fed == nil {
			fed = make(map[int]int)
		}
		fed[k] = j
	}
	return nil
}

// validateStreams checks the stream paths of t (stdin_path, stdout_path,
// stderr_path) and normalizes them like Files keys: a stdin_path not
// with a non-empty stdin, and no output path naming the stdin_path's
// file, which opening the output would truncate before the task reads
// it. The stdout_path and the stderr_path may name one file (2>&1).
func validateStreams(p string, t *Task) error {
	for _, f := range []struct {
		name string
		v    *string
	}{{"stdin_path", &t.StdinPath}, {"stdout_path", &t.StdoutPath}, {"stderr_path", &t.StderrPath}} {
		if *f.v == "" {
			continue
		}
		c, problem := cleanWorkspacePath(*f.v)
		if problem != "" {
			return fieldErr(p+"."+f.name, problem)
		}
		*f.v = c
	}
	switch in := t.StdinPath; {
	case in == "":
	case t.Stdin != "":
		return fieldErr(p+".stdin_path", "not together with a non-empty stdin")
	case t.StdoutPath == in:
		return fieldErr(p+".stdout_path", "same file as stdin_path; it would be truncated before the task reads it")
	case t.StderrPath == in:
		return fieldErr(p+".stderr_path", "same file as stdin_path; it would be truncated before the task reads it")
	}
	return nil
}

// validateStreamFiles refuses two tasks of the step s at sp that write
// the same file (stdout_path, stderr_path): their streams would
// overwrite each other.
func validateStreamFiles(sp string, s Step) error {
	var by map[string]int // output file -> its task
	for j, t := range s.Tasks {
		for _, f := range []struct{ name, v string }{{"stdout_path", t.StdoutPath}, {"stderr_path", t.StderrPath}} {
			if f.v == "" {
				continue
			}
			if k, ok := by[f.v]; ok && k != j {
				return fieldErr(taskPath(sp, s, j)+"."+f.name,
					fmt.Sprintf("%s writes the same file; two tasks of a step cannot", taskPath(sp, s, k)))
			}
			if by == nil {
				by = make(map[string]int)
			}
			by[f.v] = j
		}
	}
	return nil
}

// The field paths name a value of a request in messages, in the
// request's JSON shape: steps[2][0].files["a.c"].

// maxQuotedLen bounds how much of a client-supplied name or key is echoed
// in an error message.
const maxQuotedLen = 64

// quoteForMsg quotes s for an error message, shortening a long s.
func quoteForMsg(s string) string {
	if len(s) <= maxQuotedLen {
		return strconv.Quote(s)
	}
	n := maxQuotedLen
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strconv.Quote(s[:n]) + "..."
}

// keyPath returns the path of the entry k of the object at path: files["a.c"].
func keyPath(path, k string) string { return path + "[" + quoteForMsg(k) + "]" }

// indexPath returns the path of element i of the array at path: args[2].
func indexPath(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// taskPath returns the path of task j of the step s at sp. It follows the
// JSON shape of the step (Step.array): steps[2] for the task of a single
// step, steps[2][0] for a task of an array.
func taskPath(sp string, s Step, j int) string {
	if s.array() {
		return indexPath(sp, j)
	}
	return sp
}

// validateTask checks one task and normalizes its paths.
func validateTask(p string, t *Task, allowed []Profile) error {
	switch {
	case t.Cmd == "":
		return fieldErr(p+".cmd", "empty")
	case hasNUL(t.Cmd):
		return fieldErr(p+".cmd", "contains a NUL byte")
	}
	for i, a := range t.Args {
		if hasNUL(a) {
			return fieldErr(indexPath(p+".args", i), "contains a NUL byte")
		}
	}
	for _, k := range sortedKeys(t.Env) {
		switch {
		case !validEnvName(k):
			return fieldErr(keyPath(p+".env", k), "invalid name; names match [A-Za-z_][A-Za-z0-9_]*")
		case hasNUL(t.Env[k]):
			return fieldErr(keyPath(p+".env", k), "value contains a NUL byte")
		}
	}
	if err := validateFiles(p+".files", t); err != nil {
		return err
	}
	if err := validateOutputs(p+".outputs", t); err != nil {
		return err
	}
	if err := validateStreams(p, t); err != nil {
		return err
	}
	if wd := t.WorkingDir; wd != "" {
		switch {
		case hasNUL(wd):
			return fieldErr(p+".working_dir", "contains a NUL byte")
		case wd[0] != '/':
			return fieldErr(p+".working_dir", "must be an absolute path")
		}
		t.WorkingDir = path.Clean(wd)
	}
	if prof := t.SandboxProfile; prof != "" {
		switch {
		case !prof.known():
			return fieldErr(p+".sandbox_profile",
				fmt.Sprintf("unknown profile %s; known: %s", quoteForMsg(string(prof)), profileList(Profiles())))
		case !slices.Contains(allowed, prof):
			return newError(CodeProfileNotAllowed,
				fmt.Sprintf("%s.sandbox_profile: profile %q is not allowed; allowed: %s", p, prof, profileList(allowed)), nil)
		}
	}
	return nil
}

// validateFiles checks the paths and file ids of t.Files, in the order of
// the keys, and replaces t.Files by a map with normalized keys if any key
// was not in normal form.
func validateFiles(p string, t *Task) error {
	if len(t.Files) == 0 {
		return nil
	}
	keys := sortedKeys(t.Files)
	orig := make(map[string]string, len(keys)) // normalized path -> key
	changed := false
	for _, k := range keys {
		kp := keyPath(p, k)
		clean, problem := cleanWorkspacePath(k)
		if problem != "" {
			return fieldErr(kp, problem)
		}
		if id := t.Files[k].FileID; id != "" && !isFileIDHex(id) {
			return fieldErr(kp+".file_id", msgFileID)
		}
		if prev, dup := orig[clean]; dup {
			return fieldErr(kp, "same path as "+quoteForMsg(prev))
		}
		orig[clean] = k
		changed = changed || clean != k
	}
	// A file cannot also be a directory holding another file. Sorted with
	// '/' lowest, a path is directly followed by the paths below it.
	cleans := slices.SortedFunc(maps.Keys(orig), comparePaths)
	for i := 1; i < len(cleans); i++ {
		if dir := cleans[i-1]; strings.HasPrefix(cleans[i], dir+"/") {
			return fieldErr(keyPath(p, orig[cleans[i]]),
				fmt.Sprintf("%s is a file, not a directory", quoteForMsg(orig[dir])))
		}
	}
	if changed {
		m := make(map[string]File, len(orig))
		for clean, k := range orig {
			m[clean] = t.Files[k]
		}
		t.Files = m
	}
	return nil
}

// validateOutputs checks the paths of t.Outputs, at most MaxOutputs, and
// replaces t.Outputs by a slice of their normal forms if any path was not
// in normal form. Two paths with one normal form are invalid.
func validateOutputs(p string, t *Task) error {
	if n := len(t.Outputs); n > MaxOutputs {
		return fieldErr(p, fmt.Sprintf("%d paths; at most %d are allowed", n, MaxOutputs))
	}
	var clean []string // the normal forms, once one differs
	for i, o := range t.Outputs {
		c, problem := cleanWorkspacePath(o)
		if problem != "" {
			return fieldErr(indexPath(p, i), problem)
		}
		if j := slices.IndexFunc(t.Outputs[:i], func(prev string) bool { return path.Clean(prev) == c }); j >= 0 {
			return fieldErr(indexPath(p, i), fmt.Sprintf("same path as %s", indexPath(p, j)))
		}
		if clean == nil && c != o {
			clean = slices.Clone(t.Outputs)
		}
		if clean != nil {
			clean[i] = c
		}
	}
	if clean != nil {
		t.Outputs = clean
	}
	return nil
}

// cleanWorkspacePath returns the normal form of a workspace-relative file
// path, or a description of what is wrong with it.
func cleanWorkspacePath(p string) (clean, problem string) {
	switch {
	case p == "":
		return "", "empty path"
	case hasNUL(p):
		return "", "path contains a NUL byte"
	case p[0] == '/':
		return "", "absolute path; files are relative to the workspace"
	}
	for rest := p; rest != ""; {
		var c string
		c, rest, _ = strings.Cut(rest, "/")
		if c == ".." {
			return "", "path escapes the workspace"
		}
	}
	clean = path.Clean(p)
	if clean == "." {
		return "", "path names the workspace itself"
	}
	if len(clean) > maxPathLen {
		return "", "path longer than " + strconv.Itoa(maxPathLen) + " bytes"
	}
	for rest := clean; rest != ""; {
		var c string
		c, rest, _ = strings.Cut(rest, "/")
		if len(c) > maxPathComponent {
			return "", "path component longer than " + strconv.Itoa(maxPathComponent) + " bytes"
		}
	}
	return clean, ""
}

// comparePaths orders paths byte-wise, with '/' before every other byte.
func comparePaths(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x == '/' {
			return -1
		}
		if y == '/' {
			return 1
		}
		return int(x) - int(y)
	}
	return len(a) - len(b)
}

// isFileIDHex reports whether s is a file id: 64 lowercase hex characters.
func isFileIDHex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// validEnvName reports whether s matches [A-Za-z_][A-Za-z0-9_]*.
func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || c == '_'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func hasNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// profileList returns "a, b, c", or "none".
func profileList(ps []Profile) string {
	if len(ps) == 0 {
		return "none"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}
