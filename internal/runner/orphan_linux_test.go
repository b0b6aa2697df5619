package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc/internal/initproc"
	"github.com/svc-sandbox/svc/internal/seccomp"
)

// proc is a process as the host sees it.
type proc struct {
	pid, ppid int
	start     uint64 // clock ticks after boot: a reused pid is another process
	cmdline   string
}

// readProc reads /proc/<pid>; ok is false once the process is gone, a
// zombie, or on its way out (PF_EXITING).
func readProc(pid int) (p proc, ok bool) {
	d := filepath.Join("/proc", strconv.Itoa(pid))
	b, err := os.ReadFile(filepath.Join(d, "stat"))
	if err != nil {
		return p, false
	}
	j := bytes.LastIndexByte(b, ')')
	if j < 0 {
		return p, false
	}
	// state ppid pgrp session tty_nr tpgid flags ... starttime (22nd field)
	f := strings.Fields(string(b[j+1:]))
	if len(f) < 20 {
		return p, false
	}
	p.pid = pid
	p.ppid, _ = strconv.Atoi(f[1])
	flags, _ := strconv.ParseUint(f[6], 10, 64)
	p.start, _ = strconv.ParseUint(f[19], 10, 64)
	const pfExiting = 0x4
	if f[0] == "Z" || f[0] == "X" || flags&pfExiting != 0 {
		return p, false
	}
	cmd, _ := os.ReadFile(filepath.Join(d, "cmdline"))
	p.cmdline = strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
	return p, true
}

// procTree returns the live process root and its descendants.
func procTree(root int) []proc {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var all []proc
	for _, d := range dirs {
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			if p, ok := readProc(pid); ok {
				all = append(all, p)
			}
		}
	}
	in := map[int]bool{root: true}
	for grew := true; grew; {
		grew = false
		for _, p := range all {
			if !in[p.pid] && in[p.ppid] {
				in[p.pid], grew = true, true
			}
		}
	}
	var out []proc
	for _, p := range all {
		if in[p.pid] {
			out = append(out, p)
		}
	}
	return out
}

// alive returns those of procs that still run.
func alive(procs []proc) []proc {
	var out []proc
	for _, p := range procs {
		if q, ok := readProc(p.pid); ok && q.start == p.start {
			out = append(out, q)
		}
	}
	return out
}

// baseFilter returns the watched base filter of the v2 profiles, as a
// service's shells install it.
func baseFilter(t *testing.T) []byte {
	t.Helper()
	var ps []*seccomp.Profile
	for _, name := range []string{"compile_v2", "native_v2"} {
		p, err := seccomp.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	l, err := seccomp.NewLayers(ps, initproc.ShellCalls)
	if err == nil {
		l, err = l.Watched()
	}
	if err != nil {
		t.Fatal(err)
	}
	prog, err := seccomp.Build(l.Base)
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// TestShellEndsWithControlSocket: once the service's end of a shell's
// control socket is closed, as when the service dies, the shell's init
// exits at once, and every process of its task with it, whatever the
// task does: the init watches the socket, with no help from its
// parent-death signal (this process lives on). Each shell runs under the
// watched base filter a service gives it, which its init's watch must
// get through at every task.
func TestShellEndsWithControlSocket(t *testing.T) {
	requireRoot(t)
	base := baseFilter(t)
	for _, tc := range []struct {
		name string
		argv []string
		want string // a process of the task, running, by its command line
	}{
		{"idle", nil, ""},
		{"blocked", []string{"sleep", "60"}, "sleep 60"},
		{"spinning", []string{"sh", "-c", "while :; do :; done"}, "sh -c while :; do :; done"},
		{"tree deaf to SIGTERM", []string{"sh", "-c", "trap '' TERM; sleep 61 & (sleep 61 &); sh -c 'sleep 61 & wait' & while :; do :; done"}, "sleep 61"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testShellConfig(t)
			cfg.Spec.BaseFilter, cfg.Spec.BaseWatched = base, true
			s, err := BuildShell(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			// A task first: the init's watch of its socket sees it
			// arrive, and lets it through.
			if r := runShell(t, s, "true"); !r.Report.Exited || r.Report.Status.ExitStatus() != 0 {
				t.Fatalf("a first task: %+v", r.Report)
			}
			done := make(chan struct{})
			if tc.argv != nil {
				c, err := s.Cell(context.Background(), shellTask(t))
				if err != nil {
					t.Fatal(err)
				}
				go func() {
					defer close(done)
					task := testTask(tc.argv...)
					task.WallTimeout = time.Minute
					c.Run(context.Background(), task)
					c.Close()
				}()
			} else {
				close(done)
			}
			var procs []proc
			for end := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				procs = procTree(s.pid)
				n := 0
				for _, p := range procs {
					if tc.want != "" && p.cmdline == tc.want {
						n++
					}
				}
				if n > 0 || tc.want == "" {
					break
				}
				if time.Now().After(end) {
					t.Fatalf("the task not running after 30 s: %v", procs)
				}
			}
			if len(procs) == 0 {
				t.Fatal("no init")
			}

			start := time.Now()
			s.ctl.Close()
			var left []proc
			for end := start.Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
				if left = alive(procs); len(left) == 0 || time.Now().After(end) {
					break
				}
			}
			took := time.Since(start)
			if len(left) > 0 {
				t.Fatalf("%d of %d processes alive %v after the control socket closed: %v", len(left), len(procs), took, left)
			}
			t.Logf("%d processes gone %v after the control socket closed", len(procs), took.Round(time.Microsecond))
			if took > 2*time.Second {
				t.Errorf("gone %v after the control socket closed, want within 2 s", took)
			}
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the task's Run did not return after its shell ended")
			}
		})
	}
}
