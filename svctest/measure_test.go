package svctest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/svctest"
)

// heavyCPP is the heavy C++ build of docs/languages.md: the whole standard
// library and <regex> at -O2.
const heavyCPP = `#include <bits/stdc++.h>
#include <regex>
using namespace std;

int main() {
    string s;
    getline(cin, s);
    regex re("([a-z]+)@([a-z]+)\\.com");
    smatch m;
    map<string, int> seen;
    for (auto it = sregex_iterator(s.begin(), s.end(), re); it != sregex_iterator(); ++it) seen[(*it)[2]]++;
    for (auto& [k, v] : seen) cout << k << " " << v << "\n";
    cout << "Hello, " << (regex_search(s, m, regex("\\w+")) ? m.str() : "") << "!\n";
}
`

// A measured is a build and run measured in a sandbox and on the host.
type measured struct {
	name       string
	files      map[string]svc.File
	build, run []string
	env        map[string]string // of the sandbox's tasks; the host gets them too
	hostEnv    map[string]string // the host's alone
	runProfile svc.Profile
	tools      []string
}

func measuredOf(l language) measured {
	return measured{name: l.name, files: l.program.Files, build: l.program.Build, run: l.program.Run,
		runProfile: l.program.RunProfile, tools: l.tools}
}

// TestMeasureLanguages measures the build and the run of each language's
// hello world, in a sandbox and on the host, for docs/languages.md; it runs
// only with SVC_MEASURE_LANGUAGES=1 (SVC_MEASURE_N sets the repetitions,
// 5 by default). The sandbox has 1 GiB, 256 pids and no CPU quota
// (cpu.max "max"), except the rows marked "1 CPU", which have the default
// CPU_MAX; the host runs the same commands as nobody in a fresh directory
// with the task environment. Figures are medians, except memory: the
// largest.
func TestMeasureLanguages(t *testing.T) {
	if os.Getenv("SVC_MEASURE_LANGUAGES") != "1" {
		t.Skip("set SVC_MEASURE_LANGUAGES=1 to measure the languages")
	}
	n := 5
	if v, err := strconv.Atoi(os.Getenv("SVC_MEASURE_N")); err == nil && v > 0 {
		n = v
	}
	lim := svc.Limits{MemoryMax: svc.GiB, PidsMax: 256, CPUTimeLimit: 60 * time.Second,
		WallTimeout: 60 * time.Second, OverallTimeout: 120 * time.Second}
	free := lim
	free.CPUMax = svc.CPUMax{Period: 100000}
	// Go's builds as the server has them: the standard library prepared
	// (Config.GoBuildCache) in the sandbox, a warm GOCACHE on the host;
	// "go (cold cache)" below builds it all.
	sbFree := svctest.New(t, svc.Config{Limits: free, GoBuildCache: svctest.GoBuildCache()})
	sbOne := svctest.New(t, svc.Config{Limits: lim, GoBuildCache: svctest.GoBuildCache()})
	for _, sb := range []*svc.Sandbox{sbFree, sbOne} {
		if err := sb.WaitGoBuildCache(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// Not t.TempDir, whose parent nobody cannot search.
	hostGoCache, err := os.MkdirTemp("", "svc-measure-gocache-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hostGoCache) })
	if err := os.Chmod(hostGoCache, 0o777); err != nil {
		t.Fatal(err)
	}

	var ms []measured
	for _, l := range languages() {
		m := measuredOf(l)
		if l.name == "go" {
			m.name = "go (warm cache)"
			m.hostEnv = map[string]string{"GOCACHE": hostGoCache}
			// The first of the host's builds fills its cache.
			if _, _, err := hostRun(m); err != nil {
				t.Fatal(err)
			}
		}
		ms = append(ms, m)
	}
	ms = append(ms,
		measured{name: "go (cold cache)", files: map[string]svc.File{"main.go": {Content: "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tvar s string\n\tfmt.Scan(&s)\n\tfmt.Printf(\"Hello, %s!\\n\", s)\n}\n"}},
			build: []string{"/usr/local/go/bin/go", "build", "-o", "main", "main.go"}, run: []string{"./main"},
			env: map[string]string{"GOCACHE": "/tmp/gocache"}, runProfile: svc.ProfileNativeV2, tools: []string{"/usr/local/go/bin/go"}},
		measured{name: "cpp heavy", files: map[string]svc.File{"main.cpp": {Content: heavyCPP}},
			build: svctest.CPP("").Build, run: []string{"./main"}, runProfile: svc.ProfileNativeV2, tools: []string{"g++"}},
	)
	t.Logf("| language | build: sandbox wall / cpu | host wall / cpu | sandbox memory peak, pids peak | host max RSS | run: sandbox wall / cpu | host wall / cpu | sandbox memory peak, pids peak | host max RSS |")
	for _, m := range ms {
		for _, one := range []bool{false, true} {
			if one && m.build == nil {
				continue
			}
			sb, name := sbFree, m.name
			if one {
				sb, name = sbOne, m.name+", 1 CPU"
			}
			if !haveTools(m.tools) {
				t.Logf("| %s | not installed |", name)
				continue
			}
			row, err := measure(t, sb, m, n)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			t.Logf("| %s | %s |", name, row)
		}
	}
}

func haveTools(tools []string) bool {
	for _, tool := range tools {
		if strings.HasPrefix(tool, "/") {
			if _, err := os.Stat(tool); err != nil {
				return false
			}
		} else if !onTaskPath(tool) {
			return false
		}
	}
	return true
}

// sample is one measured command.
type sample struct {
	wall, cpu time.Duration
	mem, pids int64
}

// measure runs m n times in sb and on the host and returns the cells of
// its row.
func measure(t *testing.T, sb *svc.Sandbox, m measured, n int) (string, error) {
	var sbBuild, sbRun, hBuild, hRun []sample
	profile := m.runProfile
	for range n {
		b, r, err := sandboxRun(sb, m, profile)
		if err != nil && profile != svc.ProfileCompileV2 {
			t.Logf("%s: the run under %s failed (%v): measured under compile_v2", m.name, profile, err)
			profile = svc.ProfileCompileV2
			b, r, err = sandboxRun(sb, m, profile)
		}
		if err != nil {
			return "", err
		}
		if m.build != nil {
			sbBuild = append(sbBuild, b)
		}
		sbRun = append(sbRun, r)
		hb, hr, err := hostRun(m)
		if err != nil {
			return "", err
		}
		if m.build != nil {
			hBuild = append(hBuild, hb)
		}
		hRun = append(hRun, hr)
	}
	run := fmt.Sprintf("%s | %s | %s | %s", times(sbRun), times(hRun), peaks(sbRun), rss(hRun))
	if profile != m.runProfile {
		run += " (under compile_v2)"
	}
	if m.build == nil {
		return "- | - | - | - | " + run, nil
	}
	return fmt.Sprintf("%s | %s | %s | %s | %s", times(sbBuild), times(hBuild), peaks(sbBuild), rss(hBuild), run), nil
}

// rss is the largest resident set of the host's samples (the process
// and its waited-for children, one at a time).
func rss(s []sample) string {
	var mem int64
	for _, x := range s {
		mem = max(mem, x.mem)
	}
	return fmt.Sprintf("%.0f MiB", float64(mem)/svc.MiB)
}

func times(s []sample) string {
	walls := make([]time.Duration, len(s))
	cpus := make([]time.Duration, len(s))
	for i, x := range s {
		walls[i], cpus[i] = x.wall, x.cpu
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	return fmt.Sprintf("%d / %d ms", walls[len(s)/2].Milliseconds(), cpus[len(s)/2].Milliseconds())
}

func peaks(s []sample) string {
	var mem, pids int64
	for _, x := range s {
		mem, pids = max(mem, x.mem), max(pids, x.pids)
	}
	return fmt.Sprintf("%.0f MiB, %d", float64(mem)/svc.MiB, pids)
}

// sandboxRun builds m (uncached) and runs it once on "world", the run
// under profile; it returns the samples of both steps.
func sandboxRun(sb *svc.Sandbox, m measured, profile svc.Profile) (build, run sample, err error) {
	req := &svc.Request{}
	files := m.files
	if m.build != nil {
		req.Steps = append(req.Steps, svc.Single(svc.Task{Cmd: m.build[0], Args: m.build[1:], Files: files, Env: m.env,
			SandboxProfile: svc.ProfileCompileV2}))
		files = nil
	}
	req.Steps = append(req.Steps, svc.Single(svc.Task{Cmd: m.run[0], Args: m.run[1:], Files: files, Env: m.env,
		Stdin: "world\n", SandboxProfile: profile}))
	resp, err := sb.Run(context.Background(), req)
	if err != nil {
		return build, run, err
	}
	var out []sample
	for _, s := range resp.Results {
		r := s.Results[0]
		if r.Outcome != svc.OutcomeExited || r.ExitCode != 0 {
			return build, run, fmt.Errorf("%s %d: %s", r.Outcome, r.ExitCode, trim(r.Stderr))
		}
		x := sample{wall: time.Duration(r.Stats.WallTimeMs) * time.Millisecond}
		if r.Stats.CPUUsageUsec != nil {
			x.cpu = time.Duration(*r.Stats.CPUUsageUsec) * time.Microsecond
		}
		if r.Stats.MemoryPeakBytes != nil {
			x.mem = *r.Stats.MemoryPeakBytes
		}
		if r.Stats.PidsPeak != nil {
			x.pids = *r.Stats.PidsPeak
		}
		out = append(out, x)
	}
	if m.build != nil {
		build, out = out[0], out[1:]
	}
	if !strings.Contains(resp.Results[len(resp.Results)-1].Results[0].Stdout, "Hello, world!") {
		return build, run, fmt.Errorf("run: stdout %q", resp.Results[len(resp.Results)-1].Results[0].Stdout)
	}
	return build, out[0], nil
}

// hostRun builds and runs m on the host as nobody, in a fresh directory
// with the task environment (TMPDIR and GOCACHE in a fresh directory).
func hostRun(m measured) (build, run sample, err error) {
	dir, err := os.MkdirTemp("", "svc-measure-")
	if err != nil {
		return build, run, err
	}
	defer os.RemoveAll(dir)
	for _, d := range []string{"svc", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return build, run, err
		}
	}
	work := filepath.Join(dir, "svc")
	for name, f := range m.files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(f.Content), 0o644); err != nil {
			return build, run, err
		}
	}
	if err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(p, 65534, 65534)
	}); err != nil {
		return build, run, err
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + work, "TMPDIR=" + filepath.Join(dir, "tmp"), "LANG=C.UTF-8"}
	for k, v := range m.env {
		env = append(env, k+"="+strings.Replace(v, "/tmp", filepath.Join(dir, "tmp"), 1))
	}
	for k, v := range m.hostEnv {
		env = append(env, k+"="+v)
	}
	do := func(argv []string, stdin string) (sample, error) {
		cmd := exec.Command(argv[0], argv[1:]...)
		if !strings.Contains(argv[0], "/") {
			cmd.Path = taskLookPath(argv[0])
		}
		cmd.Dir, cmd.Env, cmd.Stdin = work, env, strings.NewReader(stdin)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		start := time.Now()
		out, err := cmd.CombinedOutput()
		wall := time.Since(start)
		if err != nil {
			return sample{}, fmt.Errorf("host %v: %v: %s", argv, err, trim(string(out)))
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		return sample{wall: wall, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), mem: ru.Maxrss * 1024}, nil
	}
	if m.build != nil {
		if build, err = do(m.build, ""); err != nil {
			return build, run, err
		}
	}
	run, err = do(m.run, "world\n")
	return build, run, err
}
