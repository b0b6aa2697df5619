//go:build linux

// Command trace measures the v2 allowlists. It builds and runs the
// workloads in testdata/ under strace -f, collects the system calls they
// make, and compares them with ../allow_v2.txt, the allowlist both v2
// profiles share (they differ only by the process and socket rules).
//
// Run it from the module root, on the image the service runs (it needs
// strace, gcc, g++, make, python3 and go). Run as root, it runs the
// workloads as nobody (65534), since a task never has root's privileges:
//
//	go run ./internal/seccomp/trace          # the traced sets and the diff
//	go run ./internal/seccomp/trace -v       # ... and who made each call
//	go run ./internal/seccomp/trace -write   # ... and rewrite the tables
//
// It exits 1 when a table misses a traced call (or a workload makes a call
// every profile kills). With -write it adds the missing calls to a group
// "Traced, not yet grouped" (move each to its group by hand, the tool keeps
// the grouping and the comments) and drops the calls no longer traced,
// except those marked * (allowed by hand, with the reason in their group's
// comment).
//
// The workloads: gcc and g++ compiling and linking C and C++ (-O2,
// dynamic and -static when the host has static libc and libstdc++),
// python3 running a script that imports the common modules, a local module,
// starts a thread and a subprocess; go build of a module with goroutines;
// a sh pipeline script with coreutils, sed, awk, find and xargs; make -j2
// building and running a program; and the compiled programs: C (dynamic
// and static, a libc tour including abort and a segfault), C++ with
// threads (dynamic and static) and the Go binary.
//
// With -corpus it also runs the conformance suite (conformance/, some two
// hundred programs a judge or a script runs) with its host side under
// strace, and counts their calls as workloads too.
//
// The calls the profiles decide by rule (clone, clone3, fork, vfork,
// socket, socketpair, personality) are reported but not listed in the
// table.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	libseccomp "github.com/seccomp/libseccomp-golang"

	"github.com/svc-sandbox/svc/internal/seccomp"
)

// A workload is one traced command.
type workload struct {
	name   string
	dir    string   // relative to the work directory
	argv   []string // argv[0] is looked up in the workload PATH
	stdin  string
	signal syscall.Signal // the signal expected to end it; 0: exit 0
	needs  string         // "static-c", "static-c++": skipped without
}

const numbers = "5 3 9 1 3 7 2 8\n"

var workloads = []workload{
	// Toolchains (compile_v2).
	{name: "gcc", argv: strs("gcc -O2 -Wall -o hello hello.c")},
	{name: "gcc-tour", argv: strs("gcc -O2 -Wall -o tour tour.c -lm")},
	{name: "gcc-static", argv: strs("gcc -O2 -Wall -static -o tour_static tour.c -lm"), needs: "static-c"},
	{name: "g++", argv: strs("g++ -O2 -Wall -pthread -o threads threads.cc")},
	{name: "g++-static", argv: strs("g++ -O2 -Wall -static -pthread -o threads_static threads.cc"), needs: "static-c++"},
	{name: "python3", argv: strs("python3 script.py"), stdin: numbers},
	{name: "go-build", dir: "gohello", argv: strs("go build -o ../gohello.bin .")},
	{name: "sh", argv: strs("sh pipeline.sh")},
	{name: "make", argv: strs("make -j2")},

	// Compiled programs.
	{name: "c", argv: strs("./hello"), stdin: numbers},
	{name: "c-tour", argv: strs("./tour all"), stdin: numbers},
	{name: "c-abort", argv: strs("./tour abort"), signal: syscall.SIGABRT},
	{name: "c-segv", argv: strs("./tour segv"), signal: syscall.SIGSEGV},
	{name: "c-static", argv: strs("./tour_static all"), stdin: numbers, needs: "static-c"},
	{name: "c-static-abort", argv: strs("./tour_static abort"), signal: syscall.SIGABRT, needs: "static-c"},
	{name: "c++-threads", argv: strs("./threads"), stdin: numbers},
	{name: "c++-static", argv: strs("./threads_static"), stdin: numbers, needs: "static-c++"},
	{name: "go", argv: strs("./gohello.bin"), stdin: numbers},
}

func main() {
	write := flag.Bool("write", false, "rewrite the tables: add missing calls, drop calls no longer traced")
	verbose := flag.Bool("v", false, "print the workloads that made each call")
	keep := flag.Bool("keep", false, "keep the work directory")
	corpus := flag.Bool("corpus", false, "trace the conformance corpus too (go test ./conformance/ with SVC_CONFORMANCE_STRACE)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./internal/seccomp/trace [-v] [-write] [-keep] [-corpus]\n(from the module root)\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	log := func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }

	pkgDir := filepath.Join("internal", "seccomp")
	if _, err := os.Stat(filepath.Join(pkgDir, "trace", "testdata")); err != nil {
		log("trace: run from the module root: %v", err)
		os.Exit(2)
	}
	for _, tool := range []string{"strace", "gcc", "g++", "make", "python3", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			log("trace: %v", err)
			os.Exit(2)
		}
	}

	work, err := os.MkdirTemp("", "seccomp-trace-")
	check(err)
	if *keep {
		log("work directory: %s", work)
	} else {
		defer os.RemoveAll(work)
	}
	check(os.CopyFS(work, os.DirFS(filepath.Join(pkgDir, "trace", "testdata"))))
	for _, d := range []string{"tmp", "gocache", "gopath"} {
		check(os.Mkdir(filepath.Join(work, d), 0o755))
	}
	env, err := environ(work)
	check(err)
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: nobody, Gid: nobody}
		check(chownAll(work, nobody))
	}
	have := map[string]bool{
		"static-c":   hasLib("gcc", "libc.a"),
		"static-c++": hasLib("g++", "libstdc++.a"),
	}

	// call -> workloads that made it.
	calls := make(map[string][]string)
	var skipped []string
	for _, w := range workloads {
		if w.needs != "" && !have[w.needs] {
			skipped = append(skipped, w.name+" (no "+w.needs+")")
			continue
		}
		made, err := trace(work, env, cred, w)
		if err != nil {
			log("trace: %s: %v", w.name, err)
			os.Exit(1)
		}
		log("%-16s %3d calls", w.name, len(made))
		for _, c := range made {
			calls[c] = append(calls[c], w.name)
		}
	}
	if len(skipped) > 0 {
		log("skipped: %s", strings.Join(skipped, ", "))
	}
	if *corpus {
		n, err := traceCorpus(work, calls)
		if err != nil {
			log("trace: conformance corpus: %v", err)
			os.Exit(1)
		}
		log("%-16s %3d cases", "conformance", n)
	}

	killed := make(map[string]bool)
	for _, g := range seccomp.Dangerous {
		for _, n := range g.Names {
			killed[n.Syscall] = true
		}
	}
	failed := false
	{
		file := filepath.Join(pkgDir, seccomp.AllowFile)
		f, err := os.Open(file)
		check(err)
		table, err := seccomp.ParseTable(f)
		f.Close()
		if err != nil {
			log("trace: %s: %v", file, err)
			os.Exit(1)
		}

		var missing, stale, hand, ruled, dangerous []string
		for _, c := range slices.Sorted(maps.Keys(calls)) {
			switch listed, _ := table.Has(c); {
			case killed[c]:
				dangerous = append(dangerous, c)
			case slices.Contains(seccomp.Ruled(), c):
				ruled = append(ruled, c)
			case !listed:
				missing = append(missing, c)
			}
		}
		for _, g := range table.Groups {
			for _, n := range g.Names {
				switch {
				case calls[n.Syscall] != nil:
				case n.Hand:
					hand = append(hand, n.Syscall)
				default:
					stale = append(stale, n.Syscall)
				}
			}
		}

		fmt.Printf("%d calls traced\n", len(calls))
		if *verbose {
			for _, c := range slices.Sorted(maps.Keys(calls)) {
				fmt.Printf("  %-24s %s\n", c, strings.Join(slices.Compact(calls[c]), " "))
			}
		} else {
			fmt.Print(columns(slices.Sorted(maps.Keys(calls))))
		}
		fmt.Printf("  decided by rule: %s\n", list(ruled))
		fmt.Printf("  missing from %s: %s\n", file, list(missing))
		fmt.Printf("  listed, not traced: %s\n", list(stale))
		fmt.Printf("  allowed by hand (*), not traced: %s\n", list(hand))
		fmt.Printf("  table: %d calls\n", len(table.Syscalls()))
		if len(dangerous) > 0 {
			fmt.Printf("  KILLED IN EVERY PROFILE, yet traced: %s\n", list(dangerous))
			failed = true
		}

		if *write {
			update(table, missing, stale)
			var b bytes.Buffer
			check(table.Format(&b))
			check(os.WriteFile(file, b.Bytes(), 0o644))
			fmt.Printf("  wrote %s: %d calls\n", file, len(table.Syscalls()))
		} else if len(missing) > 0 {
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// traceCorpus runs the conformance suite with its host side under strace
// (SVC_CONFORMANCE_STRACE naming a file in work) and adds the calls of
// each case's build and run to calls, as made by "conformance/<case>". It
// returns how many cases it read. The suite's own verdict does not
// matter here: a case the sandbox fails still shows what it calls.
func traceCorpus(work string, calls map[string][]string) (int, error) {
	out := filepath.Join(work, "conformance.calls")
	cmd := exec.Command("go", "test", "-count=1", "-run", "TestConformance", "./conformance/")
	cmd.Env = append(os.Environ(), "SVC_CONFORMANCE_STRACE="+out)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "trace: the conformance suite did not pass (%v); its calls count all the same\n", err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return 0, fmt.Errorf("%w\n%s", err, output.Bytes())
	}
	cases := make(map[string]bool)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		name, rest, _ := strings.Cut(line, " ")
		cases[name] = true
		for _, c := range strings.Fields(rest) {
			if callName.MatchString(c) {
				calls[c] = append(calls[c], "conformance/"+name)
			}
		}
	}
	return len(cases), nil
}

// trace runs one workload under strace -f and returns the calls it made,
// sorted.
func trace(work string, env []string, cred *syscall.Credential, w workload) ([]string, error) {
	out := filepath.Join(work, "strace."+w.name)
	args := append([]string{"-f", "-qq", "-e", "trace=all", "-o", out, "--"}, w.argv...)
	cmd := exec.Command("strace", args...)
	cmd.Dir = filepath.Join(work, w.dir)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Stdin = strings.NewReader(w.stdin)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case w.signal != 0 && errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == w.signal:
	case w.signal != 0:
		return nil, fmt.Errorf("want %v, got %v\n%s", w.signal, err, output.Bytes())
	case err != nil:
		return nil, fmt.Errorf("%v\n%s", err, output.Bytes())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	return parse(data)
}

// callName is what a system call's name looks like.
var callName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// A strace -f line: "PID name(" or "PID <... name resumed>"; strace names
// calls it does not know "syscall_0x1d3".
var callRE = regexp.MustCompile(`(?m)^\d+ +(?:<\.\.\. )?([a-z0-9_]+)(?:\(| resumed>)`)

func parse(data []byte) ([]string, error) {
	set := make(map[string]bool)
	for _, m := range callRE.FindAllSubmatch(data, -1) {
		name := string(m[1])
		if hex, ok := strings.CutPrefix(name, "syscall_0x"); ok {
			nr, err := strconv.ParseInt(hex, 16, 32)
			if err != nil {
				return nil, fmt.Errorf("strace: %s", name)
			}
			if name, err = libseccomp.ScmpSyscall(nr).GetName(); err != nil {
				return nil, fmt.Errorf("strace: system call %d: no name known to libseccomp", nr)
			}
		}
		set[name] = true
	}
	if len(set) == 0 {
		return nil, errors.New("strace recorded no system calls")
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// update adds the missing calls to the table in a new group and drops the
// stale ones.
func update(t *seccomp.Table, missing, stale []string) {
	for i := range t.Groups {
		t.Groups[i].Names = slices.DeleteFunc(t.Groups[i].Names, func(n seccomp.Name) bool {
			return slices.Contains(stale, n.Syscall)
		})
	}
	if len(missing) > 0 {
		g := seccomp.Group{Comment: []string{"Traced, not yet grouped: move each call to its group."}}
		for _, c := range missing {
			g.Names = append(g.Names, seccomp.Name{Syscall: c})
		}
		t.Groups = append(t.Groups, g)
	}
}

// environ is the workloads' environment, close to a task's (HOME is the
// work directory, as /svc is a task's), with the Go toolchain's caches in
// the work directory and no network.
func environ(work string) ([]string, error) {
	path := "/usr/local/bin:/usr/bin:/bin"
	if goBin, err := exec.LookPath("go"); err == nil {
		path = filepath.Dir(goBin) + ":" + path
	} else if _, err := os.Stat("/usr/local/go/bin/go"); err == nil {
		path = "/usr/local/go/bin:" + path
	} else {
		return nil, errors.New("no go toolchain in PATH or /usr/local/go/bin")
	}
	return []string{
		"PATH=" + path,
		"HOME=" + work,
		"TMPDIR=" + filepath.Join(work, "tmp"),
		"LANG=C.UTF-8",
		"GOCACHE=" + filepath.Join(work, "gocache"),
		"GOPATH=" + filepath.Join(work, "gopath"),
		"GOTOOLCHAIN=local",
		"GOFLAGS=-mod=mod",
		"GOPROXY=off",
	}, nil
}

// nobody is the identity the workloads run as when the tool runs as root.
const nobody = 65534

// chownAll gives the tree at dir to uid (and the group of the same number).
func chownAll(dir string, uid int) error {
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}

// hasLib reports whether the compiler finds the library file.
func hasLib(cc, lib string) bool {
	out, err := exec.Command(cc, "-print-file-name="+lib).Output()
	if err != nil {
		return false
	}
	p := strings.TrimSpace(string(out))
	_, err = os.Stat(p)
	return filepath.IsAbs(p) && err == nil
}

func strs(s string) []string { return strings.Fields(s) }

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " ")
}

// columns lays the names out in lines of at most 76 columns, indented.
func columns(names []string) string {
	var b strings.Builder
	col := 0
	for _, n := range names {
		if col > 0 && col+1+len(n) > 76 {
			b.WriteString("\n")
			col = 0
		}
		if col == 0 {
			b.WriteString("   ")
			col = 3
		}
		b.WriteString(" " + n)
		col += 1 + len(n)
	}
	if col > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

func check(err error) {
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			fmt.Fprintf(os.Stderr, "trace: %s: %v\n", pe.Path, pe.Err)
		} else {
			fmt.Fprintf(os.Stderr, "trace: %v\n", err)
		}
		os.Exit(1)
	}
}
