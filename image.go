package svc

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// imageFiles identify the root filesystem the sandboxes see: its
// distribution, its installed packages and a Go toolchain outside them.
var imageFiles = []string{
	"etc/os-release",
	"var/lib/dpkg/status",
	"usr/local/go/VERSION",
}

// DetectImage describes the root filesystem rootfs whose system
// directories the sandboxes see (Config.RootFS).
//
// id is a short hex digest (16 characters) of the files that identify the
// image: /etc/os-release, the dpkg status file and /usr/local/go/VERSION,
// each as far as it exists; a package installed or removed gives a new id.
//
// toolchains are name-version strings, sorted, of the toolchains a task
// finds on its PATH (/usr/local/bin, /usr/bin, /bin, in rootfs). The
// versions are read from files, never by running a program:
//
//   - "gcc-12" and "g++-12" for each gcc-N and g++-N command;
//   - "python-3.11" for each pythonX.Y command;
//   - "pypy-7.3", the PyPy version (not the Python version it
//     implements), when pypy3 is a command, from the dpkg status of the
//     pypy3 package;
//   - "java-17", the major version, when java and javac are commands,
//     from JAVA_VERSION in the release file of the JDK that javac belongs
//     to (symbolic links such as /etc/alternatives are followed inside
//     rootfs);
//   - "rustc-1.63" when rustc is a command, from the dpkg status of the
//     rustc package;
//   - "node-20", the major version, when node is a command, from
//     NODE_MAJOR_VERSION in include/node/node_version.h under /usr or
//     /usr/local, else from the dpkg status of the nodejs package;
//   - "go-1.26.8" for /usr/local/go (the sandboxes find its go and gofmt
//     in /usr/local/bin) and for the Go root of a go command on the PATH
//     (Debian's /usr/bin/go into /usr/lib/go-N), from their VERSION file.
//
// A command whose version is not found is not listed.
//
// Missing files are not errors; a file that exists but cannot be read is.
func DetectImage(rootfs string) (id string, toolchains []string, err error) {
	h := sha256.New()
	for _, name := range imageFiles {
		b, err := os.ReadFile(filepath.Join(rootfs, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("detect image: %w", err)
		}
		// Name and length frame each file, so no two sets of contents
		// hash alike.
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(b))
		h.Write(b)
	}
	id = hex.EncodeToString(h.Sum(nil))[:16]
	if toolchains, err = detectToolchains(rootfs); err != nil {
		return "", nil, err
	}
	return id, toolchains, nil
}

// taskSearchPath are the directories of a task's PATH, relative to the root.
var taskSearchPath = []string{"usr/local/bin", "usr/bin", "bin"}

var (
	ccName     = regexp.MustCompile(`^(gcc|g\+\+)-([0-9]+)$`)
	pythonName = regexp.MustCompile(`^python([0-9]+\.[0-9]+)$`)
)

// A toolchain is a language found by its commands on the task PATH,
// whose version is read from the files of the root filesystem.
type toolchain struct {
	name string
	// commands must all be on the task PATH.
	commands []string
	// version returns the version of the toolchain, "" when it is not
	// found. exe is the last command resolved in the root (symbolic links
	// followed), relative to it.
	version func(r *root, exe string) (string, error)
}

var languages = []toolchain{
	{"pypy", []string{"pypy3"}, func(r *root, _ string) (string, error) {
		return majorMinor(r.packages["pypy3"]), nil
	}},
	{"java", []string{"java", "javac"}, javaVersion},
	{"rustc", []string{"rustc"}, func(r *root, _ string) (string, error) {
		return majorMinor(r.packages["rustc"]), nil
	}},
	{"node", []string{"node"}, nodeVersion},
}

// A root is the root filesystem under detection, with its installed dpkg
// packages.
type root struct {
	dir string
	// packages maps each installed package to its version.
	packages map[string]string
}

func detectToolchains(rootfs string) ([]string, error) {
	r := &root{dir: rootfs}
	var err error
	if r.packages, err = dpkgInstalled(filepath.Join(rootfs, "var/lib/dpkg/status")); err != nil {
		return nil, fmt.Errorf("detect toolchains: %w", err)
	}
	var out []string
	for _, dir := range taskSearchPath {
		entries, err := os.ReadDir(filepath.Join(rootfs, dir))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("detect toolchains: %w", err)
		}
		for _, e := range entries {
			if m := ccName.FindStringSubmatch(e.Name()); m != nil {
				out = append(out, m[1]+"-"+m[2])
			}
			if m := pythonName.FindStringSubmatch(e.Name()); m != nil {
				out = append(out, "python-"+m[1])
			}
		}
	}
	for _, tc := range languages {
		v, err := tc.detect(r)
		if err != nil {
			return nil, fmt.Errorf("detect toolchains: %s: %w", tc.name, err)
		}
		if v != "" {
			out = append(out, tc.name+"-"+v)
		}
	}
	// Go: /usr/local/go, whose commands the sandboxes find in
	// /usr/local/bin (localBin), and the Go root of a go on the PATH
	// (Debian's golang-go links /usr/bin/go into /usr/lib/go-N).
	goRoots := []string{"usr/local/go"}
	exe, err := r.lookPath("go")
	if err != nil {
		return nil, fmt.Errorf("detect toolchains: go: %w", err)
	}
	if exe != "" {
		goRoots = append(goRoots, path.Dir(path.Dir(exe)))
	}
	for _, dir := range goRoots {
		if fi, err := os.Stat(filepath.Join(rootfs, dir, "bin/go")); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		v, err := goVersion(filepath.Join(rootfs, dir, "VERSION"))
		if err != nil {
			return nil, err
		}
		if v != "" {
			out = append(out, "go-"+v)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// detect returns the version of tc in r, "" when a command is missing or
// the version is not found.
func (tc toolchain) detect(r *root) (string, error) {
	var exe string
	for _, c := range tc.commands {
		p, err := r.lookPath(c)
		if err != nil || p == "" {
			return "", err
		}
		exe = p
	}
	return tc.version(r, exe)
}

// lookPath returns the executable file that command name is on the task
// PATH, relative to the root, with its symbolic links resolved; "" when
// there is none.
func (r *root) lookPath(name string) (string, error) {
	for _, dir := range taskSearchPath {
		p, err := r.resolve(path.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, errLinkLoop) {
			continue // no such command
		}
		if err != nil {
			return "", err
		}
		fi, err := os.Stat(filepath.Join(r.dir, p))
		if err != nil {
			return "", err
		}
		if fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", nil
}

// errLinkLoop is the error of a path with too many symbolic links.
var errLinkLoop = errors.New("too many symbolic links")

// resolve returns name, a path relative to the root, with every symbolic
// link on it followed as the sandbox would: an absolute target starts
// again at the root, and ".." stops at it.
func (r *root) resolve(name string) (string, error) {
	const maxLinks = 40
	var done []string // resolved components
	todo := strings.Split(name, "/")
	for links := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		cur := path.Join(append(done, c)...)
		fi, err := os.Lstat(filepath.Join(r.dir, cur))
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, c)
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: %w", name, errLinkLoop)
		}
		target, err := os.Readlink(filepath.Join(r.dir, cur))
		if err != nil {
			return "", err
		}
		if path.IsAbs(target) {
			done = nil
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return path.Join(done...), nil
}

// javaVersion returns the major version of the JDK whose bin directory
// holds exe (javac): the release file in the JDK's home directory says
// JAVA_VERSION="17.0.21.1" (17) or, before 9, "1.8.0_392" (8).
func javaVersion(r *root, exe string) (string, error) {
	home := path.Dir(path.Dir(exe))
	v, err := keyValue(filepath.Join(r.dir, home, "release"), "JAVA_VERSION=")
	if err != nil || v == "" {
		return "", err
	}
	v = strings.TrimPrefix(strings.Trim(v, `"`), "1.")
	major, _, _ := strings.Cut(v, ".")
	major, _, _ = strings.Cut(major, "_")
	if !isNumber(major) {
		return "", nil
	}
	return major, nil
}

// nodeVersion returns the major version of Node.js: NODE_MAJOR_VERSION
// in the node_version.h of /usr/local or /usr, else that of the nodejs
// package.
func nodeVersion(r *root, _ string) (string, error) {
	for _, prefix := range []string{"usr/local", "usr"} {
		v, err := keyValue(filepath.Join(r.dir, prefix, "include/node/node_version.h"), "#define NODE_MAJOR_VERSION ")
		if err != nil {
			return "", err
		}
		if v = strings.TrimSpace(v); isNumber(v) {
			return v, nil
		}
	}
	major, _, _ := strings.Cut(r.packages["nodejs"], ".")
	if !isNumber(major) {
		return "", nil
	}
	return major, nil
}

// keyValue returns what follows prefix on the first line of file that
// starts with it; "" when the file or the line does not exist.
func keyValue(file, prefix string) (string, error) {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			return v, nil
		}
	}
	return "", sc.Err()
}

// dpkgInstalled returns the version of each installed package of a dpkg
// status file; an empty map when there is no such file.
func dpkgInstalled(file string) (map[string]string, error) {
	pkgs := map[string]string{}
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return pkgs, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var name, version, status string
	end := func() {
		if name != "" && version != "" && strings.HasSuffix(status, " installed") {
			pkgs[name] = version
		}
		name, version, status = "", "", ""
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			end()
			continue
		}
		key, v, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, " ") {
			continue
		}
		v = strings.TrimSpace(v)
		switch key {
		case "Package":
			name = v
		case "Version":
			version = v
		case "Status":
			status = v
		}
	}
	end()
	return pkgs, sc.Err()
}

// majorMinor returns "1.63" of a version such as "1.63.0+dfsg1-2" or
// "1:1.63.0-1" (a Debian epoch is dropped); "" when it has no such form.
func majorMinor(v string) string {
	if _, after, ok := strings.Cut(v, ":"); ok {
		v = after
	}
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return ""
	}
	minor := parts[1]
	if i := strings.IndexFunc(minor, func(c rune) bool { return c < '0' || c > '9' }); i >= 0 {
		minor = minor[:i]
	}
	if !isNumber(parts[0]) || !isNumber(minor) {
		return ""
	}
	return parts[0] + "." + minor
}

// isNumber reports whether s is a non-empty string of decimal digits.
func isNumber(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// goVersion returns the version of a Go VERSION file ("go1.26.8" on its
// first line gives "1.26.8"), or "" when there is none.
func goVersion(file string) (string, error) {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("detect toolchains: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return "", sc.Err()
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "go")
	if !ok || v == "" {
		return "", nil
	}
	return v, nil
}

// A Language is how a judge builds and runs a source in one language: the
// recipe svctest's programs follow (svctest.C, CPP, ...) and GET
// /languages lists for each toolchain of the image. The measured needs
// are in docs/languages.md.
type Language struct {
	// Name is the language's short name: "c", "cpp", "python", "pypy",
	// "go", "java", "rust", "js".
	Name string `json:"name"`
	// Toolchain is the toolchain of the image that provides it, as
	// DetectImage names it ("g++-12"); "" in [LanguageRecipes].
	Toolchain string `json:"toolchain,omitempty"`
	// Source is the workspace path the source goes to ("main.cpp").
	Source string `json:"source"`
	// Files are other files the build needs, inline, by workspace path
	// (Go's go.mod); nil for none.
	Files map[string]string `json:"files,omitempty"`
	// Build is the command and arguments that build the source in /svc,
	// under BuildProfile; nil for a language whose source runs as it is.
	Build        []string `json:"build,omitempty"`
	BuildProfile Profile  `json:"build_profile,omitempty"`
	// BuildNeeds are the least limits a build of a small source needs,
	// with margin (memory, pids, CPU time, wall time; zero fields need
	// no more than the defaults): a service whose limits are lower
	// cannot build it.
	BuildNeeds TaskLimits `json:"build_needs,omitzero"`
	// Run is the command and arguments that run the program in /svc,
	// under RunProfile, reading its input on stdin.
	Run        []string   `json:"run"`
	RunProfile Profile    `json:"run_profile"`
	RunNeeds   TaskLimits `json:"run_needs,omitzero"`
	// prefix is what the names of its toolchains start with.
	prefix string
}

// recipes are the languages a judge runs, with the toolchain each needs.
// Builds run under compile_v2 (compilers start processes), runs under
// native_v2 (threads only).
var recipes = []Language{
	{Name: "c", prefix: "gcc-", Source: "main.c",
		Build: []string{"gcc", "-O2", "-std=gnu17", "-o", "main", "main.c", "-lm"}, BuildProfile: ProfileCompileV2,
		BuildNeeds: TaskLimits{MemoryMax: 64 * MiB, PidsMax: 8},
		Run:        []string{"./main"}, RunProfile: ProfileNativeV2},
	{Name: "cpp", prefix: "g++-", Source: "main.cpp",
		Build: []string{"g++", "-O2", "-std=gnu++17", "-o", "main", "main.cpp"}, BuildProfile: ProfileCompileV2,
		BuildNeeds: TaskLimits{MemoryMax: 512 * MiB, PidsMax: 8, CPUTimeLimit: 10 * time.Second, WallTimeout: 20 * time.Second},
		Run:        []string{"./main"}, RunProfile: ProfileNativeV2},
	{Name: "python", prefix: "python-", Source: "main.py",
		Run: []string{"python3", "main.py"}, RunProfile: ProfileNativeV2},
	{Name: "pypy", prefix: "pypy-", Source: "main.py",
		Run: []string{"pypy3", "main.py"}, RunProfile: ProfileNativeV2,
		RunNeeds: TaskLimits{MemoryMax: 64 * MiB, PidsMax: 8}},
	{Name: "go", prefix: "go-", Source: "main.go", Files: map[string]string{"go.mod": "module main\n\ngo 1.22\n"},
		Build: []string{"go", "build", "-o", "main", "."}, BuildProfile: ProfileCompileV2,
		BuildNeeds: TaskLimits{MemoryMax: 512 * MiB, PidsMax: 64, CPUTimeLimit: 30 * time.Second, WallTimeout: 60 * time.Second},
		Run:        []string{"./main"}, RunProfile: ProfileNativeV2},
	{Name: "java", prefix: "java-", Source: "Main.java",
		Build: []string{"javac", "-encoding", "UTF-8", "Main.java"}, BuildProfile: ProfileCompileV2,
		BuildNeeds: TaskLimits{MemoryMax: 512 * MiB, PidsMax: 64, CPUTimeLimit: 10 * time.Second, WallTimeout: 20 * time.Second},
		Run:        []string{"java", "-Xss64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:-UsePerfData", "Main"}, RunProfile: ProfileNativeV2,
		RunNeeds: TaskLimits{MemoryMax: 384 * MiB, PidsMax: 64}},
	{Name: "rust", prefix: "rustc-", Source: "main.rs",
		Build: []string{"rustc", "--edition=2021", "-O", "-o", "main", "main.rs"}, BuildProfile: ProfileCompileV2,
		BuildNeeds: TaskLimits{MemoryMax: 512 * MiB, PidsMax: 64, CPUTimeLimit: 10 * time.Second, WallTimeout: 20 * time.Second},
		Run:        []string{"./main"}, RunProfile: ProfileNativeV2},
	{Name: "js", prefix: "node-", Source: "main.js",
		Run: []string{"node", "main.js"}, RunProfile: ProfileNativeV2,
		RunNeeds: TaskLimits{MemoryMax: 128 * MiB, PidsMax: 32}},
}

// LanguageRecipes returns every language's recipe, with no toolchain:
// each a copy the caller may change.
func LanguageRecipes() []Language {
	out := make([]Language, len(recipes))
	for i, l := range recipes {
		out[i] = l.clone()
	}
	return out
}

// LanguageRecipe returns the recipe of the language name ("cpp"), with no
// toolchain, and whether there is one.
func LanguageRecipe(name string) (Language, bool) {
	for _, l := range recipes {
		if l.Name == name {
			return l.clone(), true
		}
	}
	return Language{}, false
}

// Languages returns the recipe of each language that one of toolchains
// (as DetectImage lists them) provides, in the order of
// [LanguageRecipes], each with its toolchain: the last of toolchains'
// sorted names that it starts with (gcc-13 before gcc-12; the commands
// are the unversioned ones, gcc, the image's default). A toolchain no
// recipe knows is left out.
func Languages(toolchains []string) []Language {
	var out []Language
	for _, l := range recipes {
		found := ""
		for _, tc := range toolchains {
			if strings.HasPrefix(tc, l.prefix) && tc > found {
				found = tc
			}
		}
		if found != "" {
			l = l.clone()
			l.Toolchain = found
			out = append(out, l)
		}
	}
	return out
}

func (l Language) clone() Language {
	l.Files = maps.Clone(l.Files)
	l.Build = slices.Clone(l.Build)
	l.Run = slices.Clone(l.Run)
	return l
}
