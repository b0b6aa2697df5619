package svc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestHostIDLockOverlap: a range that overlaps a held one, by any id, is
// refused with a message naming both ranges and the holder; adjacent
// ranges are not; a released range is free again.
func TestHostIDLockOverlap(t *testing.T) {
	dir := t.TempDir()
	held, err := lockHostIDs(dir, 100_000, 48, "/state/a")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int{{100_000, 48}, {100_002, 48}, {100_047, 10}, {99_990, 11}, {99_000, 5000}, {100_010, 2}} {
		l, err := lockHostIDs(dir, r[0], r[1], "/state/b")
		if err == nil {
			l.release()
			t.Errorf("[%d, %d): taken while [100000, 100048) is held", r[0], r[0]+r[1])
			continue
		}
		want := fmt.Sprintf("sandbox: host ids %d to %d (UIDBase, SANDBOX_UID_BASE %d) overlap ids 100000 to 100047, held by another svc instance (pid %d, state dir /state/a)",
			r[0], r[0]+r[1]-1, r[0], os.Getpid())
		if !errors.Is(err, ErrHostIDsInUse) || CodeOf(err) != CodeSandboxSetupFailed || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("[%d, %d): %v (code %s), want %q, sandbox_setup_failed", r[0], r[0]+r[1], err, CodeOf(err), want)
		}
	}
	for _, r := range [][2]int{{99_000, 1000}, {100_048, 48}} {
		l, err := lockHostIDs(dir, r[0], r[1], "/state/b")
		if err != nil {
			t.Errorf("[%d, %d), next to [100000, 100048): %v", r[0], r[0]+r[1], err)
			continue
		}
		if err := l.release(); err != nil {
			t.Error(err)
		}
	}
	if err := held.release(); err != nil {
		t.Fatal(err)
	}
	if err := held.release(); err != nil {
		t.Errorf("second release: %v", err)
	}
	if names := lockFiles(t, dir); len(names) != 0 {
		t.Errorf("lock files left after release: %v", names)
	}
	again, err := lockHostIDs(dir, 100_010, 48, "/state/b")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again.release()
}

// TestHostIDLockStale: a lock file that no one holds (its holder died) is
// removed, and its range, or one overlapping it, can be taken.
func TestHostIDLockStale(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "100000-100048"), []byte("pid 1\nstate_dir /gone\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Not lock files: left alone.
	for _, name := range []string{"README", "5-3", "x-y"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := lockHostIDs(dir, 100_020, 48, "/state/new")
	if err != nil {
		t.Fatalf("over a stale file: %v", err)
	}
	defer l.release()
	if names := lockFiles(t, dir); strings.Join(names, " ") != "100020-100068 5-3 README x-y" {
		t.Errorf("lock directory holds %v, want the new file and the three others", names)
	}
	b, err := os.ReadFile(filepath.Join(dir, "100020-100068"))
	if want := fmt.Sprintf("pid %d\nstate_dir /state/new\n", os.Getpid()); err != nil || string(b) != want {
		t.Errorf("lock file reads %q (%v), want %q", b, err, want)
	}
}

// TestHostIDLockConcurrent: ranges taken at once by several goroutines
// (each its own open file, as another process's would be) never overlap,
// and disjoint ones are all taken.
func TestHostIDLockConcurrent(t *testing.T) {
	dir := t.TempDir()
	const n = 16
	locks := make([]*hostIDLock, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		// [i*10, i*10+20): each overlaps its neighbours.
		wg.Go(func() { locks[i], errs[i] = lockHostIDs(dir, 100_000+i*10, 20, "/state") })
	}
	wg.Wait()
	taken := 0
	for i := range n {
		if errs[i] != nil {
			if !errors.Is(errs[i], ErrHostIDsInUse) {
				t.Errorf("range %d: %v", i, errs[i])
			}
			continue
		}
		taken++
		if i > 0 && locks[i-1] != nil {
			t.Errorf("ranges %d and %d, which overlap, both taken", i-1, i)
		}
	}
	if taken == 0 {
		t.Error("no range taken")
	}
	for _, l := range locks {
		l.release()
	}

	for i := range n {
		wg.Go(func() { locks[i], errs[i] = lockHostIDs(dir, 200_000+i*20, 20, "/state") })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("disjoint range %d: %v", i, errs[i])
		}
		locks[i].release()
	}
	if names := lockFiles(t, dir); len(names) != 0 {
		t.Errorf("lock files left after release: %v", names)
	}
}

// lockFiles returns the names in dir, sorted.
func lockFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
