package conformance_test

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/svc-sandbox/svc"
)

// caseFile is the settings file of a case; every other file is input.
const caseFile = "case.txt"

// maxTimeout is the longest run a case may ask for: the sandbox's wall
// timeout, which is the same for every case.
const maxTimeout = 60 * time.Second

// A testCase is one parsed cases/<lang>/<name>/case.txt.
type testCase struct {
	Lang, Name string
	Dir        string // the case's directory

	Build     []string // build: argv, or nil
	HostBuild []string // hostbuild: argv, or nil
	Run       []string // run: argv
	Profiles  []svc.Profile
	Stdin     string   // stdin: a file of the case, or ""
	StdinGen  []string // stdin-gen: argv, or nil
	Expect    map[svc.Profile]expectation
	Normalize []*regexp.Regexp
	DeniedOK  map[string]string // syscall -> reason
	Timeout   time.Duration
	Needs     []string // needs: commands or absolute paths (globs)
}

// expectation is an expect line: the outcome a profile gives by design.
type expectation struct {
	Outcome svc.Outcome
	Reason  string
}

// submissionLangs are the languages whose programs are submissions: they
// run under both v2 profiles by default.
var submissionLangs = []string{"c", "cpp", "python", "go", "java", "rust", "js", "pypy"}

// scriptLangs start processes: compile_v2 only by default.
var scriptLangs = []string{"shell", "tools"}

// outcomes are the outcomes an expect line may name.
var outcomes = []svc.Outcome{
	svc.OutcomePolicyViolation, svc.OutcomeOutOfMemory, svc.OutcomeTimedOut,
	svc.OutcomeCPUTimeExceeded, svc.OutcomeOutputLimit, svc.OutcomePidsLimit,
	svc.OutcomeSignaled, svc.OutcomeExited,
}

// defaultProfiles returns the profiles of a language with no profiles:
// line, or nil for a language the suite does not know.
func defaultProfiles(lang string) []svc.Profile {
	switch {
	case slices.Contains(submissionLangs, lang):
		return []svc.Profile{svc.ProfileCompileV2, svc.ProfileNativeV2}
	case slices.Contains(scriptLangs, lang):
		return []svc.Profile{svc.ProfileCompileV2}
	}
	return nil
}

// loadCase reads and parses dir/case.txt; dir is cases/<lang>/<name>.
func loadCase(dir string) (*testCase, error) {
	f, err := os.Open(filepath.Join(dir, caseFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := parseCase(f, filepath.Base(filepath.Dir(dir)), filepath.Base(dir))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, caseFile), err)
	}
	c.Dir = dir
	if c.Stdin != "" {
		if _, err := os.Stat(filepath.Join(dir, c.Stdin)); err != nil {
			return nil, fmt.Errorf("%s: stdin: %w", filepath.Join(dir, caseFile), err)
		}
	}
	return c, nil
}

// parseCase parses a case.txt of the case lang/name. Every mistake is an
// error naming its line: an unknown key, a repeated one, an empty
// command, an expect or denied-ok line without a reason.
func parseCase(r io.Reader, lang, name string) (*testCase, error) {
	c := &testCase{Lang: lang, Name: name, Timeout: maxTimeout,
		Expect: make(map[svc.Profile]expectation), DeniedOK: make(map[string]string)}
	seen := make(map[string]bool)
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("line %d: want \"key: value\", got %q", n, line)
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if err := c.set(key, val, seen); err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", n, key, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return c, c.check()
}

// repeatable are the keys a case.txt may give more than once.
var repeatable = []string{"normalize", "denied-ok"}

// set applies one key: value line.
func (c *testCase) set(key, val string, seen map[string]bool) error {
	if !slices.Contains(repeatable, key) && !strings.HasPrefix(key, "expect ") {
		if seen[key] {
			return fmt.Errorf("given twice")
		}
		seen[key] = true
	}
	argv := func() ([]string, error) {
		f := strings.Fields(val)
		if len(f) == 0 {
			return nil, fmt.Errorf("empty command")
		}
		return f, nil
	}
	var err error
	switch key {
	case "build":
		c.Build, err = argv()
	case "hostbuild":
		c.HostBuild, err = argv()
	case "run":
		c.Run, err = argv()
	case "stdin-gen":
		c.StdinGen, err = argv()
	case "profiles":
		c.Profiles = nil
		for _, p := range strings.Fields(val) {
			if !slices.Contains(svc.Profiles(), svc.Profile(p)) {
				return fmt.Errorf("unknown profile %q (known: %v)", p, svc.Profiles())
			}
			c.Profiles = append(c.Profiles, svc.Profile(p))
		}
		if len(c.Profiles) == 0 {
			return fmt.Errorf("no profile")
		}
	case "stdin":
		if val == "" || val == caseFile || !filepath.IsLocal(val) {
			return fmt.Errorf("want a file of the case, got %q", val)
		}
		c.Stdin = val
	case "normalize":
		re, err := regexp.Compile(val)
		if err != nil {
			return err
		}
		if re.MatchString("") {
			return fmt.Errorf("%q matches the empty string", val)
		}
		c.Normalize = append(c.Normalize, re)
	case "denied-ok":
		call, reason, _ := strings.Cut(val, " ")
		if call == "" || strings.TrimSpace(reason) == "" {
			return fmt.Errorf("want \"<syscall> <reason>\", got %q", val)
		}
		c.DeniedOK[call] = strings.TrimSpace(reason)
	case "timeout":
		s, err := strconv.Atoi(val)
		if err != nil || s < 1 || time.Duration(s)*time.Second > maxTimeout {
			return fmt.Errorf("want whole seconds from 1 to %d, got %q", int(maxTimeout.Seconds()), val)
		}
		c.Timeout = time.Duration(s) * time.Second
	case "needs":
		c.Needs = strings.Fields(val)
		if len(c.Needs) == 0 {
			return fmt.Errorf("empty")
		}
	default:
		p, ok := strings.CutPrefix(key, "expect ")
		if !ok {
			return fmt.Errorf("unknown key")
		}
		return c.setExpect(svc.Profile(strings.TrimSpace(p)), val)
	}
	return err
}

// setExpect applies an "expect <profile>: <outcome> <reason>" line.
func (c *testCase) setExpect(p svc.Profile, val string) error {
	if !slices.Contains(svc.Profiles(), p) {
		return fmt.Errorf("unknown profile %q", p)
	}
	if _, dup := c.Expect[p]; dup {
		return fmt.Errorf("given twice")
	}
	o, reason, _ := strings.Cut(val, " ")
	if !slices.Contains(outcomes, svc.Outcome(o)) {
		return fmt.Errorf("unknown outcome %q (known: %v)", o, outcomes)
	}
	if reason = strings.TrimSpace(reason); reason == "" {
		return fmt.Errorf("a reason is required: \"<outcome> <reason>\"")
	}
	c.Expect[p] = expectation{Outcome: svc.Outcome(o), Reason: reason}
	return nil
}

// check completes a parsed case: defaults, required keys, and expect
// lines for profiles the case runs under.
func (c *testCase) check() error {
	if c.Run == nil {
		return fmt.Errorf("run: required")
	}
	if c.Stdin != "" && c.StdinGen != nil {
		return fmt.Errorf("stdin and stdin-gen: give one")
	}
	if c.Profiles == nil {
		if c.Profiles = defaultProfiles(c.Lang); c.Profiles == nil {
			return fmt.Errorf("language %q has no default profiles (known: %v, %v): give profiles:", c.Lang, submissionLangs, scriptLangs)
		}
	}
	for p := range c.Expect {
		if !slices.Contains(c.Profiles, p) {
			return fmt.Errorf("expect %s: the case does not run under %s (profiles %v)", p, p, c.Profiles)
		}
	}
	return nil
}

// readFiles returns the files of a case directory but case.txt, by
// slash-separated relative path.
func readFiles(dir string) (map[string]string, error) {
	files := make(map[string]string)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel == caseFile {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	return files, err
}

// caseDirs returns the directories cases/<lang>/<name> under root, sorted.
func caseDirs(root string) ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "*", "*"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out, nil
}
