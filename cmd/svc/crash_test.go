package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
)

// hostProc is a process as the host sees it in /proc.
type hostProc struct {
	pid, ppid, uid int
	comm, cmdline  string
	start          uint64 // clock ticks after boot: tells a reused pid apart
}

// readProc reads /proc/<pid>; ok is false once the process is gone, a
// zombie, or on its way out (PF_EXITING: its memory and files released).
func readProc(pid int) (p hostProc, ok bool) {
	d := filepath.Join("/proc", strconv.Itoa(pid))
	b, err := os.ReadFile(filepath.Join(d, "stat"))
	if err != nil {
		return p, false
	}
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return p, false
	}
	// pid (comm) state ppid pgrp session tty_nr tpgid flags ... starttime (22nd)
	f := strings.Fields(string(b[j+1:]))
	if len(f) < 20 {
		return p, false
	}
	p.pid, p.comm = pid, string(b[i+1:j])
	p.ppid, _ = strconv.Atoi(f[1])
	flags, _ := strconv.ParseUint(f[6], 10, 64)
	p.start, _ = strconv.ParseUint(f[19], 10, 64)
	const pfExiting = 0x4
	if f[0] == "Z" || f[0] == "X" || flags&pfExiting != 0 {
		return p, false
	}
	status, err := os.ReadFile(filepath.Join(d, "status"))
	if err != nil {
		return p, false
	}
	for _, line := range strings.Split(string(status), "\n") {
		if fs := strings.Fields(line); len(fs) >= 2 && fs[0] == "Uid:" {
			p.uid, _ = strconv.Atoi(fs[1])
		}
	}
	cmd, _ := os.ReadFile(filepath.Join(d, "cmdline"))
	p.cmdline = strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
	return p, true
}

// liveProcs returns every live process of the host.
func liveProcs() []hostProc {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []hostProc
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// serverProcs returns the processes of the server with pid server: its
// descendants (the zygote, and the inits, which the zygote clones as the
// server's children, with what runs in them) and every process whose uid
// is in the server's sandbox range, [base, base+1024) (testUIDBase).
func serverProcs(server, base int) []hostProc {
	all := liveProcs()
	mine := map[int]bool{server: true}
	for grew := true; grew; {
		grew = false
		for _, p := range all {
			if !mine[p.pid] && mine[p.ppid] {
				mine[p.pid], grew = true, true
			}
		}
	}
	var out []hostProc
	for _, p := range all {
		if p.pid != server && (mine[p.pid] || p.uid >= base && p.uid < base+1024) {
			out = append(out, p)
		}
	}
	return out
}

// survivors returns those of procs still alive (the same process: its
// pid not reused), and any other process in the uid range.
func survivors(procs []hostProc, base int) []hostProc {
	var out []hostProc
	seen := map[int]bool{}
	for _, p := range procs {
		if q, ok := readProc(p.pid); ok && q.start == p.start {
			out, seen[p.pid] = append(out, q), true
		}
	}
	for _, p := range liveProcs() {
		if !seen[p.pid] && p.uid >= base && p.uid < base+1024 {
			out = append(out, p)
		}
	}
	return out
}

func describe(procs []hostProc) string {
	var b strings.Builder
	for _, p := range procs {
		fmt.Fprintf(&b, "\n  pid %d ppid %d uid %d %s: %s", p.pid, p.ppid, p.uid, p.comm, p.cmdline)
	}
	return b.String()
}

// TestServeKilledTasksDie: a server killed with SIGKILL under load takes
// every process it started with it, within a second: the zygote, the
// idle shells built ahead, and the running tasks (blocked, spinning on
// CPU, ignoring SIGTERM, a tree of processes, the two of a parallel step)
// with their inits, and the task preparing the Go build cache. Untrusted
// code must not outlive the process that bounds its time; before, the
// tasks ran on, reparented, until their own end or the next start.
func TestServeKilledTasksDie(t *testing.T) {
	dir := stateDir(t)
	baseStr := testUIDBase()
	base, _ := strconv.Atoi(baseStr)
	gocache := filepath.Join(dir, "gocache")
	_, goErr := os.Stat("/usr/local/go/bin/go")
	p := startProcess(t, "STATE_DIR="+dir, "SANDBOX_UID_BASE="+baseStr, "API_KEYS=crash-key",
		"GO_BUILD_CACHE_DIR="+gocache, "MAX_CONCURRENCY=8", "MAX_PARALLEL_TASKS=2",
		"WALL_TIMEOUT_MS=120000", "CPU_TIME_LIMIT_MS=120000", "OVERALL_TIMEOUT_MS=120000")
	p.key = "crash-key"
	server := p.cmd.Process.Pid
	// After the test, whatever happened: nothing of the server left
	// running, and its cgroups, mounts and workspaces swept, so that its
	// state dir can go.
	t.Cleanup(func() {
		for _, q := range survivors(serverProcs(server, base), base) {
			if q.pid != server {
				// A survivor of the old code, or of a failure.
				if proc, err := os.FindProcess(q.pid); err == nil {
					proc.Kill()
				}
			}
		}
		if sb, err := svc.New(svc.Config{StateDir: dir, UIDBase: base}); err == nil {
			sb.Close(context.Background())
		} else {
			t.Logf("sweep after the test: %v", err)
		}
	})

	tasks := []string{
		// Blocked in nanosleep.
		`{"steps": [{"cmd": "sleep", "args": ["60"]}]}`,
		// Spinning on a CPU.
		`{"steps": [{"cmd": "sh", "args": ["-c", "while :; do :; done"]}]}`,
		// Deaf to SIGTERM, HUP and INT.
		`{"steps": [{"cmd": "sh", "args": ["-c", "trap '' TERM HUP INT; sleep 60; sleep 60"]}]}`,
		// A tree: children, a grandchild, one left by its parent.
		`{"steps": [{"cmd": "sh", "args": ["-c", "sleep 60 & (sleep 60 &); sh -c 'sleep 60 & wait' & wait"]}]}`,
		// The two tasks of a parallel step.
		`{"steps": [[{"cmd": "sleep", "args": ["60"]}, {"cmd": "sleep", "args": ["60"]}]]}`,
	}
	// A request run first leaves its shell idle.
	if code, b := p.do(t, "POST", "/execute", `{"steps": [{"cmd": "true"}]}`); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	for _, body := range tasks {
		go p.try("POST", "/execute", body)
	}
	// Everything running: 1 + 1 + 3 + 2 sleeps, the spinner and, where
	// go is installed, the build of the Go build cache.
	var before []hostProc
	deadline := time.Now().Add(60 * time.Second)
	for {
		before = serverProcs(server, base)
		sleeps, spinner, goBuild, zygote := 0, false, false, false
		for _, q := range before {
			sleeps += btoi(q.cmdline == "sleep 60")
			spinner = spinner || strings.Contains(q.cmdline, "while :")
			goBuild = goBuild || q.cmdline == "go build std"
			zygote = zygote || q.comm == "svc-zygote"
		}
		if sleeps >= 7 && spinner && zygote && (goBuild || goErr != nil) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not all running after 60 s: %d sleeps, spinner %v, go build %v, zygote %v:%s\n%s",
				sleeps, spinner, goBuild, zygote, describe(before), p.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// What there is: shells idle (an init alone), with a task process
	// made ahead (waiting for its command), or running a task.
	children := map[int][]string{}
	for _, q := range before {
		children[q.ppid] = append(children[q.ppid], q.comm)
	}
	var idle, ready, running int
	for _, q := range before {
		switch {
		case q.comm != "svc-init":
		case len(children[q.pid]) == 0:
			idle++
		case children[q.pid][0] == "svc-task":
			ready++
		default:
			running++
		}
	}
	t.Logf("%d processes of the server before the kill: shells idle %d, ready %d, running a task %d", len(before), idle, ready, running)

	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p.cmd.Wait()
	var left []hostProc
	for end := start.Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if left = survivors(before, base); len(left) == 0 || time.Now().After(end) {
			break
		}
	}
	took := time.Since(start)
	if len(left) > 0 {
		t.Fatalf("%d processes of the server alive %v after its SIGKILL:%s", len(left), took.Round(time.Millisecond), describe(left))
	}
	t.Logf("every process of the server gone %v after its SIGKILL", took.Round(time.Millisecond))
	// A second at most, with room for a loaded machine.
	if took > 2*time.Second {
		t.Errorf("the last process of the server went %v after its SIGKILL, want within 2 s", took)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
