package svctest

import (
	"os"
	"path/filepath"
	"time"

	"github.com/svc-sandbox/svc"
)

// A Program is a source to build once and run on many inputs. The zero
// value runs nothing; [C], [CPP], [Python], [PyPy], [Go], [Java], [Rust]
// and [JS] make the usual ones.
type Program struct {
	// Files are the sources, placed in the workspace (/svc) before the
	// build: inline, or stored files by id.
	Files map[string]svc.File
	// Build is the command and arguments that build the program in /svc;
	// nil for a program that needs no build (a script). The build step
	// is marked cacheable, so a sandbox with a step cache builds a
	// source once for every request that runs it.
	Build []string
	// Run is the command and arguments that run the program in /svc;
	// each run reads one input on its standard input.
	Run []string
	// BuildProfile and RunProfile are the sandbox profiles of the build
	// and of the runs; "" is the sandbox's default.
	BuildProfile, RunProfile svc.Profile

	// BuildNeeds and RunNeeds are the least limits the build and a run
	// need (MemoryMax, PidsMax, CPUTimeLimit, WallTimeout; zero fields
	// need nothing more than the defaults): the toolchain's or the
	// runtime's own needs on a small source, measured with margin in
	// docs/languages.md; a larger program needs more. The sandbox's
	// limits (svc.Config.Limits) bound the build and, where RunLimits
	// does not lower them, the runs: a sandbox that runs p has at least
	// these ([Program.Limits]).
	BuildNeeds, RunNeeds svc.Limits

	// RunLimits are the limits of each run (svc.Task.Limits): a
	// problem's time and memory limits, lower than the sandbox's, which
	// the build keeps. Zero fields are the sandbox's; a field above the
	// sandbox's makes the request fail with limits_exceeded
	// ([Program.Limits] raises the sandbox's to them).
	RunLimits svc.TaskLimits
}

// Limits returns l with each limit that is below what p's build or its
// runs need, or below p's RunLimits, raised to that, and OverallTimeout
// to at least WallTimeout; a zero field of l is its default
// (svc.DefaultLimits) and stays zero when the default is enough. Give the
// result to svc.Config.Limits.
func (p Program) Limits(l svc.Limits) svc.Limits {
	d := svc.DefaultLimits()
	rl := p.RunLimits
	runs := svc.Limits{MemoryMax: rl.MemoryMax, PidsMax: rl.PidsMax, CPUTimeLimit: rl.CPUTimeLimit, WallTimeout: rl.WallTimeout}
	for _, need := range []svc.Limits{p.BuildNeeds, p.RunNeeds, runs} {
		l.MemoryMax = raise(l.MemoryMax, d.MemoryMax, need.MemoryMax)
		l.PidsMax = raise(l.PidsMax, d.PidsMax, need.PidsMax)
		l.CPUTimeLimit = raise(l.CPUTimeLimit, d.CPUTimeLimit, need.CPUTimeLimit)
		l.WallTimeout = raise(l.WallTimeout, d.WallTimeout, need.WallTimeout)
	}
	l.OutputLimit = raise(l.OutputLimit, d.OutputLimit, rl.OutputLimit)
	// A request may run a task as long as the task may run.
	l.OverallTimeout = raise(l.OverallTimeout, d.OverallTimeout, l.WallTimeout)
	return l
}

// raise returns v (def when zero) raised to need; v unchanged when it is
// zero and def is enough, so that a zero field stays a default.
func raise[T int64 | time.Duration](v, def, need T) T {
	switch {
	case v == 0 && def >= need:
		return 0
	case v == 0:
		return need
	}
	return max(v, need)
}

// C returns the program of a C source: built by gcc -O2 -std=gnu17 as
// main.c, run under native_v2.
func C(src string) Program { return fromRecipe("c", src) }

// CPP returns the program of a C++ source: built by g++ -O2 -std=gnu++17
// as main.cpp, run under native_v2. A source that includes
// <bits/stdc++.h> and <regex> takes about 300 MiB and 3 s of CPU to build:
// BuildNeeds are set for it.
func CPP(src string) Program { return fromRecipe("cpp", src) }

// Python returns the program of a Python 3 source, main.py, run by
// python3 under native_v2 (a submission: its threads need no process; a
// program that forks, multiprocessing for one, needs compile_v2).
func Python(src string) Program { return fromRecipe("python", src) }

// Go returns the program of a Go source, main.go, in a module of its own:
// built by go build under compile_v2 (go starts the compiler and the
// linker), run under native_v2. In a sandbox with a prepared Go build
// cache (svc.Config.GoBuildCache) the build compiles the program alone,
// in a fraction of a second of CPU; without one it compiles the standard
// library first, about 10 s of CPU and 350 MiB: BuildNeeds are for that.
func Go(src string) Program { return fromRecipe("go", src) }

// GoBuildCache returns a directory for svc.Config.GoBuildCache that the
// tests of this machine share, run after run ($TMPDIR/svc-test-gocache):
// the first Sandbox given it prepares the Go standard library's build
// cache there (about a minute of CPU), the others wait for that one
// (Sandbox.WaitGoBuildCache) and reuse it.
func GoBuildCache() string { return filepath.Join(os.TempDir(), "svc-test-gocache") }

// PyPy returns the program of a Python 3 source, main.py, run by pypy3
// (PyPy 7.3, Python 3.9) under native_v2: its JIT and threads need no
// process.
func PyPy(src string) Program { return fromRecipe("pypy", src) }

// JavaHeap is the largest heap of a [Java] program: -Xmx of its run.
const JavaHeap = 256 * svc.MiB

// Java returns the program of a Java source whose class Main is in
// Main.java: built by javac, run by java under native_v2 (the JVM makes
// threads, not processes) with a judge's flags: -Xss64m, a 64 MiB stack
// for deep recursion on the main thread; -XX:+UseSerialGC, one collector
// thread and a smaller footprint; -XX:-UsePerfData, no
// /tmp/hsperfdata_<user>/<pid> file (the tasks of a parallel step share
// /tmp, and each JVM is pid 2 in its own PID namespace: without it they
// lock each other's file and one warns on its stdout); -Xmx256m
// ([JavaHeap]). The JVM does not
// see the sandbox's memory limit (a task has no cgroup filesystem): with
// no -Xmx it would size its heap from the host's memory, and a program
// that used much of it would be killed (out_of_memory) instead of getting
// an OutOfMemoryError. RunNeeds leave room for the heap and the JVM's own
// memory (metaspace, code cache, thread stacks); change -Xmx in Run and
// RunNeeds.MemoryMax together.
func Java(src string) Program { return fromRecipe("java", src) }

// Rust returns the program of a Rust source, main.rs: built by rustc
// --edition=2021 -O (rustc links with cc), run under native_v2.
func Rust(src string) Program { return fromRecipe("rust", src) }

// JS returns the program of a JavaScript source, main.js, run by node
// under native_v2 (node makes threads, not processes).
func JS(src string) Program { return fromRecipe("js", src) }

// fromRecipe returns the program of src in the language name, by its
// recipe (svc.LanguageRecipe, which GET /languages serves): the source
// and the other files of the recipe, its build and run commands, its run
// profile and its needs. The build keeps the sandbox's default profile.
func fromRecipe(name, src string) Program {
	l, ok := svc.LanguageRecipe(name)
	if !ok {
		panic("svctest: no recipe for " + name)
	}
	files := map[string]svc.File{l.Source: {Content: src}}
	for p, c := range l.Files {
		files[p] = svc.File{Content: c}
	}
	return Program{
		Files: files, Build: l.Build, Run: l.Run, RunProfile: l.RunProfile,
		BuildNeeds: needs(l.BuildNeeds), RunNeeds: needs(l.RunNeeds),
	}
}

// needs returns a recipe's needs as the Limits of a Program.
func needs(t svc.TaskLimits) svc.Limits {
	return svc.Limits{MemoryMax: t.MemoryMax, PidsMax: t.PidsMax, CPUTimeLimit: t.CPUTimeLimit, WallTimeout: t.WallTimeout}
}
