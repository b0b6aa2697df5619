package svc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// hostIDLock is a range of host ids taken in a lock directory; release
// gives it back. Safe for concurrent use.
type hostIDLock struct {
	path string
	mu   sync.Mutex // guards f
	f    *os.File   // holds the flock; nil once released
}

// lockHostIDs takes the host ids [first, first+count) for a Sandbox with
// state dir stateDir in the lock directory dir. Stale files it meets are
// removed. The error names the range and its holder when another holds
// ids of it, and matches ErrHostIDsInUse.
func lockHostIDs(dir string, first, count int, stateDir string) (*hostIDLock, error) {
	end := first + count
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("host id lock directory: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("host id lock directory: %w", err)
	}
	defer d.Close() // drops the directory's flock
	if err := flock(d, unix.LOCK_EX); err != nil {
		return nil, fmt.Errorf("host id lock directory %s: %w", dir, err)
	}
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("host id lock directory %s: %w", dir, err)
	}
	for _, e := range entries {
		a, b, ok := parseIDRange(e.Name())
		if !ok {
			continue
		}
		path := filepath.Join(dir, e.Name())
		held, holder, err := heldBy(path)
		if err != nil {
			return nil, fmt.Errorf("host id lock %s: %w", path, err)
		}
		if held && a < end && first < b {
			return nil, &Error{
				Code: CodeSandboxSetupFailed,
				Msg: fmt.Sprintf("sandbox: host ids %d to %d (UIDBase, SANDBOX_UID_BASE %d) overlap ids %d to %d, held by another svc instance (%s); "+
					"give each instance on this host a range of its own", first, end-1, first, a, b-1, holder),
				Err: fmt.Errorf("%w: lock file %s", ErrHostIDsInUse, path),
			}
		}
	}
	path := filepath.Join(dir, fmt.Sprintf("%d-%d", first, end))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("host id lock: %w", err)
	}
	if err := flock(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("host id lock %s: %w", path, err)
	}
	if _, err := fmt.Fprintf(f, "pid %d\nstate_dir %s\n", os.Getpid(), stateDir); err != nil {
		os.Remove(path)
		f.Close()
		return nil, fmt.Errorf("host id lock %s: %w", path, err)
	}
	return &hostIDLock{path: path, f: f}, nil
}

// heldBy reports whether the lock file at path is held, and if so who
// holds it ("pid 1234, state dir /var/lib/svc"). A file no one holds is
// stale: it is removed, under the directory's flock. One removed
// meanwhile by its holder's release is not held.
func heldBy(path string) (held bool, holder string, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	defer f.Close()
	switch err := flock(f, unix.LOCK_EX|unix.LOCK_NB); {
	case err == nil:
		// Its holder died, or released it and is about to remove it:
		// removing it first does no harm.
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, "", err
		}
		return false, "", nil
	case !errors.Is(err, unix.EWOULDBLOCK):
		return false, "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return true, "holder unknown: " + err.Error(), nil
	}
	pid, dir := "unknown", "unknown"
	for l := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(strings.TrimSpace(l), " ")
		switch k {
		case "pid":
			pid = v
		case "state_dir":
			dir = v
		}
	}
	return true, "pid " + pid + ", state dir " + dir, nil
}

// flock applies how (unix.LOCK_EX, with unix.LOCK_NB or not) to f,
// retrying when a signal interrupts the wait.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// release removes the lock file, then drops its flock: removed while
// still held, it cannot be one that another instance found stale and
// replaced with its own. Calls after the first do nothing.
func (l *hostIDLock) release() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := os.Remove(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	err = errors.Join(err, l.f.Close())
	l.f = nil
	if err != nil {
		return fmt.Errorf("host id lock: %w", err)
	}
	return nil
}
