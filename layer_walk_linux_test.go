package svc

// The step cache's walks of a workspace on a real filesystem: a snapshot
// and the removal of a tree hold a bounded number of fds whatever the
// tree's depth, and a snapshot refuses a tree no layer could hold.

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// peakFDs runs fn and returns the most fds the process had open while it
// ran (sampled every millisecond) above those open before it.
func peakFDs(t *testing.T, fn func()) int {
	t.Helper()
	count := func() int {
		names, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(names)
	}
	before := count()
	var (
		wg   sync.WaitGroup
		done = make(chan struct{})
		peak int
	)
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if n, err := os.ReadDir("/proc/self/fd"); err == nil {
				peak = max(peak, len(n))
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	fn()
	close(done)
	wg.Wait()
	return max(peak, count()) - before
}

// mkChain makes a chain of depth directories named name in dir, each
// but the last also holding a file f, and returns the deepest open.
func mkChain(t *testing.T, dir, depth int, name string) int {
	t.Helper()
	cur, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range depth {
		if i > 0 {
			fd, err := unix.Openat(cur, "f", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			unix.Close(fd)
		}
		if err := unix.Mkdirat(cur, name, 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(cur, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(cur)
		cur = next
	}
	return cur
}

// wsDir returns a fresh directory on a tmpfs, as a workspace is, where
// there is one (/dev/shm), else in t.TempDir.
func wsDir(t *testing.T) string {
	t.Helper()
	var fs unix.Statfs_t
	if unix.Statfs("/dev/shm", &fs) != nil || fs.Type != unix.TMPFS_MAGIC {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("/dev/shm", "svc-walk-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	})
	return dir
}

func openDir(t *testing.T, p string) int {
	t.Helper()
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// TestClearDirDeep: a tree 10,000 directories deep, and wide on the way,
// is removed with a few fds.
func TestClearDirDeep(t *testing.T) {
	ws := wsDir(t)
	root := openDir(t, ws)
	deep := mkChain(t, root, 10000, "d")
	unix.Close(mkChain(t, deep, 50, "e"))
	unix.Close(deep)
	for _, n := range []string{"w1", "w2", "w3"} {
		unix.Close(mkChain(t, root, 100, n))
	}
	var err error
	if n := peakFDs(t, func() { err = clearDir(root) }); n > 4 {
		t.Errorf("clearDir held %d more fds", n)
	}
	if err != nil {
		t.Fatal(err)
	}
	if names, err := os.ReadDir(ws); err != nil || len(names) != 0 {
		t.Errorf("left %v (%v)", names, err)
	}
}

// TestSnapshotBounded: a snapshot holds a few fds whatever the depth;
// it takes a tree whose paths a layer can hold, and refuses, with
// errNoLayer, one with a path too long or paths too many bytes together.
func TestSnapshotBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T, root int)
		paths int // 0: refused
	}{
		{"1,000 deep", func(t *testing.T, root int) { unix.Close(mkChain(t, root, 1000, "d")) }, 1 + 1000 + 999},
		{"3,000 deep", func(t *testing.T, root int) { unix.Close(mkChain(t, root, 3000, "d")) }, 0},
		{"many long paths", func(t *testing.T, root int) {
			deep := mkChain(t, root, 1900, "d")
			defer unix.Close(deep)
			for i := range maxTreePathBytes / 3800 {
				name := strings.Repeat("x", 90) + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
				fd, err := unix.Openat(deep, name, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
				if err != nil {
					t.Fatal(err)
				}
				unix.Close(fd)
			}
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := wsDir(t)
			tc.make(t, openDir(t, ws))
			rq := &request{ws: ws}
			var tr *tree
			var err error
			start := time.Now()
			if n := peakFDs(t, func() { tr, err = rq.snapshot() }); n > 4 {
				t.Errorf("the snapshot held %d more fds", n)
			}
			t.Logf("the snapshot took %v", time.Since(start))
			switch {
			case tc.paths == 0 && !errors.Is(err, errNoLayer):
				t.Errorf("snapshot: %v, want errNoLayer", err)
			case tc.paths == 0:
				t.Logf("refused: %v", err)
			case err != nil:
				t.Fatal(err)
			case len(tr.paths) != tc.paths:
				t.Errorf("%d paths, want %d", len(tr.paths), tc.paths)
			}
		})
	}
}
