package svc

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/svc-sandbox/svc/internal/runner"
)

// oneSlotSandbox returns a Sandbox that runs one request at a time, of
// one task, with host ids of its own, closed at the test's end.
func oneSlotSandbox(t testing.TB) *Sandbox {
	t.Helper()
	dir, err := os.MkdirTemp("", "svc-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sb, err := New(Config{StateDir: dir, UIDBase: UIDBaseForTest(), Limits: Limits{MaxConcurrency: 1, MaxParallelTasks: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := sb.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return sb
}

// unwatch gives sb's shells built from now on the filters a kernel
// without seccomp listeners gets: no call is watched, a refused one is
// answered ENOSYS in the kernel.
func unwatch(t testing.TB, sb *Sandbox) {
	t.Helper()
	sb.drainPool()
	h := hostOf(sb)
	if err := h.dropShells(); err != nil {
		t.Fatal(err)
	}
	var err error
	if h.base, h.baseWatched, h.filters, err = taskFilters(h.cfg.AllowedProfiles, false, false); err != nil {
		t.Fatal(err)
	}
	h.watch.Store(false)
	sb.startPreparing()
}

// TestIdleShellsEvictOldest: with every place for an idle shell taken, a
// shell put back takes the place of the one idle longest, whatever its
// slot, and that one is closed; a slot at its own cap closes the shell
// put back instead.
func TestIdleShellsEvictOldest(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: builds sandbox shells")
	}
	sb := oneSlotSandbox(t)
	// No preparer takes shells meanwhile.
	sb.drainPool()
	hostOf(sb).bg.Wait()
	h := hostOf(sb)
	if err := h.dropShells(); err != nil {
		t.Fatal(err)
	}
	// Caps small enough to reach with three slots.
	h.shellMu.Lock()
	h.idlePerSlot, h.idleTotal = 2, 4
	h.shellMu.Unlock()
	if len(sb.ids) < 3 {
		t.Fatalf("%d identity slots: the test wants 3", len(sb.ids))
	}
	build := func(slot int) *shell {
		t.Helper()
		rq := &request{h: h, slot: slot, initUID: h.cfg.UIDBase + 2*slot, taskUID: h.cfg.UIDBase + 2*slot + 1}
		sh, err := h.takeShell(context.Background(), rq)
		if err != nil {
			t.Fatal(err)
		}
		return sh
	}
	idle := func() [3]int {
		h.shellMu.Lock()
		defer h.shellMu.Unlock()
		return [3]int{len(h.shells[0]), len(h.shells[1]), len(h.shells[2])}
	}
	// Slot 0's two shells go back first, then slot 1's: every place taken.
	var shells []*shell
	for _, slot := range []int{0, 0, 1, 1} {
		shells = append(shells, build(slot))
	}
	for i, slot := range []int{0, 0, 1, 1} {
		if err := h.putShell(slot, shells[i], nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := idle(); got != [3]int{2, 2, 0} {
		t.Fatalf("idle shells by slot %v, want [2 2 0]", got)
	}
	// Slot 2's shell takes the place of slot 0's first.
	if err := h.putShell(2, build(2), nil); err != nil {
		t.Fatal(err)
	}
	if got := idle(); got != [3]int{1, 2, 1} {
		t.Errorf("after a shell of slot 2 came back: idle shells by slot %v, want [1 2 1]", got)
	}
	if shells[0].Usable() || !shells[1].Usable() {
		t.Errorf("slot 0's first shell usable %v (want closed), its second %v (want kept)", shells[0].Usable(), shells[1].Usable())
	}
	// Slot 1 is at its own cap: a third shell of it is closed.
	a, b, c := build(1), build(1), build(1) // its two idle shells and a new one
	for _, sh := range []*shell{a, b, c} {
		if err := h.putShell(1, sh, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := idle(); got != [3]int{1, 2, 1} || c.Usable() {
		t.Errorf("slot 1 over its cap: idle shells by slot %v (want [1 2 1]), the shell over it usable %v", got, c.Usable())
	}
}

// TestExpectFirst: requests are prepared expecting a first task's profile
// (and install its filter ahead) only after guessRun requests in a row
// had it; a mix of profiles gets cells any task can take.
func TestExpectFirst(t *testing.T) {
	h := &host{lastFirst: ProfileCompileV2, firstRun: guessRun}
	if got := h.expected(); got != ProfileCompileV2 {
		t.Errorf("before any request: prepared requests expect %q, want the default's %q", got, ProfileCompileV2)
	}
	c2, c1 := ProfileCompileV2, ProfileCompileV1
	for i, c := range []struct {
		first Profile
		want  Profile
	}{
		{c2, c2}, {c2, c2}, // a run from the start, the default's
		{c1, ""}, {c1, ""}, {c1, ""}, {c1, c1}, {c1, c1}, // guessRun in a row
		{c2, ""}, {c1, ""}, {c2, ""}, {c2, ""}, {c2, ""}, {c2, c2},
	} {
		h.expectFirst(c.first)
		if got := h.expected(); got != c.want {
			t.Errorf("request %d (%s): prepared requests expect %q, want %q", i, c.first, got, c.want)
		}
	}
}

// TestNetnsReadOnlyAfterSockets: with watched filters, the network
// namespace of a task whose profile allows sockets is read after it only
// if the task made one; without (a kernel without seccomp listeners, or
// with whole filters per task where the task process's listener cannot
// be passed), after every such task.
func TestNetnsReadOnlyAfterSockets(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs sandboxes")
	}
	if !userNotif() {
		t.Skip("this kernel has no seccomp listeners: nothing is watched")
	}
	const n = 6
	socket := Task{Cmd: "python3", Args: []string{"-c", `import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"x", ("127.0.0.1", 9))`}}
	for _, watch := range []bool{true, false} {
		t.Run(fmt.Sprintf("watch=%v", watch), func(t *testing.T) {
			sb := oneSlotSandbox(t)
			if !watch {
				unwatch(t, sb)
			}
			run := func(task Task) {
				t.Helper()
				resp, err := sb.Run(context.Background(), &Request{Steps: []Step{Single(task)}})
				if err != nil {
					t.Fatal(err)
				}
				if r := resp.Results[0].Results[0]; r.Outcome != OutcomeExited || r.ExitCode != 0 {
					t.Fatalf("%s: %s exit %d: %s", task.Cmd, r.Outcome, r.ExitCode, r.Stderr)
				}
			}
			for range 3 {
				run(Task{Cmd: "/bin/true"})
			}
			hostOf(sb).bg.Wait()
			_, _, kept0, destroyed0 := runner.NetnsCounts()
			for range n {
				run(Task{Cmd: "/bin/true"})
			}
			hostOf(sb).bg.Wait()
			_, _, kept1, destroyed1 := runner.NetnsCounts()
			read := kept1 - kept0 + destroyed1 - destroyed0
			if want := map[bool]int64{true: 0, false: n}[watch]; read != want {
				t.Errorf("%d tasks without a socket: %d namespaces read, want %d", n, read, want)
			}
			// Changed, the namespace goes with its shell, and a thread
			// reads it again before destroying it: wait for that.
			run(socket)
			hostOf(sb).bg.Wait()
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if _, _, kept2, destroyed2 := runner.NetnsCounts(); kept2+destroyed2 > kept1+destroyed1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("a task that sent a datagram: its namespace was never read")
				}
			}
		})
	}
}

// quietRequest returns a request of its own one-slot Sandbox, which
// prepares none ahead: the request's cells and shells are the test's
// alone. The request is closed, and its slot given back, with the test.
func quietRequest(t *testing.T, id string) (*host, *request) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: builds sandbox shells")
	}
	sb := oneSlotSandbox(t)
	sb.drainPool()
	h := hostOf(sb)
	slot := sb.takeID()
	t.Cleanup(func() { sb.putID(slot) })
	rq, err := h.newRequest(id, slot)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rq.close(); err != nil {
			t.Error(err)
		}
	})
	return h, rq
}

// TestTakeCellWaitsForCellsBuiltAhead: the tasks of a step that starts
// while its cells are still being built ahead (as after a replayed step)
// take those cells, one each, instead of building a second cell and shell
// for every task.
func TestTakeCellWaitsForCellsBuiltAhead(t *testing.T) {
	_, rq := quietRequest(t, "cells-ahead")
	const width = 6
	tasks := make([]taskPlan, width)
	for i := range tasks {
		tasks[i].profile = ProfileNativeV2
	}
	ctx := context.Background()
	rq.prepare(ctx, tasks)
	cells := make([]*cell, width)
	errs := make([]error, width)
	var wg sync.WaitGroup
	for i := range cells {
		wg.Go(func() { cells[i], errs[i] = rq.takeCell(ctx, ProfileNativeV2) })
	}
	wg.Wait()
	for i, c := range cells {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		defer func() {
			if err := c.close(); err != nil {
				t.Error(err)
			}
		}()
	}
	if n := rq.ntask.Load(); n != width {
		t.Errorf("%d cells built for %d tasks whose cells were being built ahead, want %d", n, width, width)
	}
	seen := map[*cell]bool{}
	for _, c := range cells {
		if seen[c] {
			t.Fatalf("one cell taken twice")
		}
		seen[c] = true
	}
}

// TestTakeShellWaitsForClosingCells: a task that finds no idle shell
// while a cell of its request is closing in the background takes that
// cell's shell as it comes back, rather than build one.
func TestTakeShellWaitsForClosingCells(t *testing.T) {
	h, rq := quietRequest(t, "shell-back")
	slot := rq.slot
	ctx := context.Background()
	sh, err := h.takeShell(ctx, rq)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.dropShells(); err != nil {
		t.Fatal(err)
	}
	// As closeCell counts a cell closing in the background.
	h.shellMu.Lock()
	rq.returning++
	h.shellMu.Unlock()
	made, _ := runner.ShellCounts()
	type taken struct {
		sh  *shell
		err error
	}
	done := make(chan taken, 1)
	go func() {
		sh, err := h.takeShell(ctx, rq)
		done <- taken{sh, err}
	}()
	waiting := func() bool {
		h.shellMu.Lock()
		defer h.shellMu.Unlock()
		return h.shellWaits == 1
	}
	for deadline := time.Now().Add(10 * time.Second); !waiting(); {
		if time.Now().After(deadline) {
			t.Fatal("the task did not wait for the shell on its way back")
		}
		time.Sleep(time.Millisecond)
	}
	if err := h.putShell(slot, sh, rq); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	defer h.putShell(slot, got.sh, nil)
	if got.sh != sh {
		t.Error("the task did not take the shell that came back")
	}
	if now, _ := runner.ShellCounts(); now != made {
		t.Errorf("%d shells built while one was on its way back, want 0", now-made)
	}
	if rq.returning != 0 {
		t.Errorf("%d cells still counted as closing, want 0", rq.returning)
	}
}
