package svc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/svc-sandbox/svc/internal/runner"
)

// Capture and replay of layers. Between steps no process of the request is
// alive (each dies with its task's PID namespace before runStep returns),
// so nothing changes the workspace while it is walked or written. A
// request's earlier steps still chose what is in it: every walk, read and
// write goes through a file descriptor of the workspace and openat2 with
// resolveBeneath (no "..", no symlink, no other mount), and the last
// component of a path is never followed. Root's walk cannot be led out of
// the workspace, and neither can a layer being replayed.

// snapshot walks the workspace. The walk holds two fds at most and
// what the tree keeps (tree.check bounds it), however deep or wide the
// workspace: a directory is read and closed before anything beneath it
// is opened, by its path from the workspace. A workspace no layer could
// hold is an error wrapping errNoLayer, found before the walk goes on.
func (rq *request) snapshot() (*tree, error) {
	t := newTree()
	root, err := unix.Open(rq.ws, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	defer unix.Close(root)
	var st unix.Stat_t
	if err := unix.Fstat(root, &st); err != nil {
		return nil, err
	}
	t.add(".", nodeOf(&st))
	if err := t.walk(root, "."); err != nil {
		return nil, fmt.Errorf("walk workspace: %w", err)
	}
	return t, nil
}

// walk adds what the directory at p beneath root holds, depth first.
func (t *tree) walk(root int, p string) error {
	type child struct {
		path string
		node treeNode
	}
	var children []child
	err := func() error {
		dir := root
		if p != "." {
			how := *resolveBeneath
			how.Flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
			fd, err := unix.Openat2(root, p, &how)
			if err != nil {
				return fmt.Errorf("%q: %w", p, err)
			}
			defer unix.Close(fd)
			dir = fd
		}
		names, err := readDirNames(dir)
		if err != nil {
			return fmt.Errorf("%q: %w", p, err)
		}
		slices.Sort(names)
		children = make([]child, 0, len(names))
		for _, name := range names {
			c := child{path: name}
			if p != "." {
				c.path = p + "/" + name
			}
			var st unix.Stat_t
			if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return fmt.Errorf("%q: %w", c.path, err)
			}
			c.node = nodeOf(&st)
			if err := t.check(c.path, c.node.kind); err != nil {
				return err
			}
			if c.node.kind == kindSymlink {
				if c.node.target, err = readlinkAt(dir, name); err != nil {
					return fmt.Errorf("%q: %w", c.path, err)
				}
			}
			children = append(children, c)
		}
		return nil
	}()
	if err != nil {
		return err
	}
	for _, c := range children {
		t.add(c.path, c.node)
		if c.node.kind != kindDir {
			continue
		}
		if err := t.walk(root, c.path); err != nil {
			return err
		}
	}
	return nil
}

func nodeOf(st *unix.Stat_t) treeNode {
	n := treeNode{
		mode:  st.Mode & 0o7777,
		size:  st.Size,
		ino:   st.Ino,
		mtime: time.Unix(st.Mtim.Unix()),
		ctime: time.Unix(st.Ctim.Unix()),
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		n.kind = kindDir
	case unix.S_IFREG:
		n.kind = kindFile
	case unix.S_IFLNK:
		n.kind = kindSymlink
	default:
		n.kind = kindOther
	}
	return n
}

// readDirNames returns the names in the open directory dir, without "."
// and "..".
func readDirNames(dir int) ([]string, error) {
	var names []string
	buf := make([]byte, 8*KiB)
	for {
		n, err := unix.Getdents(dir, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

func readlinkAt(dir int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", err
	}
	if n >= len(buf) {
		return "", errors.New("symlink target too long")
	}
	return string(buf[:n]), nil
}

// writeLayer writes the entries of changes to lw, reading each file's
// content from the workspace. after is the snapshot changes came from: a
// file that is no longer the one it saw is an error.
func (rq *request) writeLayer(lw *layerWriter, changes []layerEntry, after *tree) error {
	root, err := unix.Open(rq.ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open workspace: %w", err)
	}
	defer unix.Close(root)
	for i := range changes {
		e := &changes[i]
		if e.kind != kindFile {
			if err := lw.entry(e); err != nil {
				return err
			}
			continue
		}
		if err := writeFileEntry(lw, root, e, after.nodes[e.path]); err != nil {
			return fmt.Errorf("%q: %w", e.path, err)
		}
	}
	return nil
}

func writeFileEntry(lw *layerWriter, root int, e *layerEntry, n treeNode) error {
	how := *resolveBeneath
	// O_NONBLOCK: opening a FIFO put in place of the file must not hang.
	how.Flags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	fd, err := unix.Openat2(root, e.path, &how)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), e.path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Ino != n.ino || st.Size != e.size {
		return errors.New("the file changed after the workspace was walked")
	}
	if err := lw.entry(e); err != nil {
		return err
	}
	return lw.content(f, e.size)
}

// applyLayer replays the entries of l in the workspace, owned by the
// request's task identity. An error leaves the workspace half changed.
func (rq *request) applyLayer(l *layer, key string) error {
	root, err := unix.Open(rq.ws, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open workspace: %w", err)
	}
	defer unix.Close(root)
	uid := rq.taskUID
	// Directory times are set last: what is made in a directory changes them.
	var dirs []layerEntry
	err = l.entries(key, func(e *layerEntry, content io.Reader) error {
		if err := applyEntry(root, uid, e, content); err != nil {
			return fmt.Errorf("%c %q: %w", e.kind, e.path, err)
		}
		if e.kind == kindDir {
			dirs = append(dirs, *e)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := range dirs {
		e := &dirs[i]
		if err := atParent(root, e.path, func(dir int, base string) error { return setTimes(dir, base, e) }); err != nil {
			return fmt.Errorf("%c %q: %w", e.kind, e.path, err)
		}
	}
	return nil
}

func applyEntry(root, uid int, e *layerEntry, content io.Reader) error {
	if e.path == "." {
		// The workspace itself (only a directory entry may name it).
		if err := unix.Fchown(root, uid, uid); err != nil {
			return err
		}
		return unix.Fchmod(root, e.mode)
	}
	return atParent(root, e.path, func(dir int, base string) error {
		switch e.kind {
		case kindWhiteout:
			return removeAt(dir, base)
		case kindDir:
			return makeDir(dir, base, uid, e.mode)
		case kindSymlink:
			if err := removeAt(dir, base); err != nil {
				return err
			}
			if err := unix.Symlinkat(e.target, dir, base); err != nil {
				return err
			}
			if err := unix.Fchownat(dir, base, uid, uid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return err
			}
			return setTimes(dir, base, e)
		case kindFile:
			if err := removeAt(dir, base); err != nil {
				return err
			}
			if err := writeFile(dir, base, uid, e, content); err != nil {
				return err
			}
			return setTimes(dir, base, e)
		}
		return fmt.Errorf("unknown entry kind %#x", e.kind)
	})
}

// atParent opens the parent directory of p beneath root, never through a
// symlink, and calls fn with it and p's last component.
func atParent(root int, p string, fn func(dir int, base string) error) error {
	how := *resolveBeneath
	how.Flags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	dir, err := unix.Openat2(root, path.Dir(p), &how)
	if err != nil {
		return fmt.Errorf("parent directory: %w", describe(err))
	}
	defer unix.Close(dir)
	return fn(dir, path.Base(p))
}

// makeDir makes the directory base in dir, replacing anything else there,
// and sets its owner and mode.
func makeDir(dir int, base string, uid int, mode uint32) error {
	err := unix.Mkdirat(dir, base, 0o700)
	if errors.Is(err, unix.EEXIST) {
		var st unix.Stat_t
		if err := unix.Fstatat(dir, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if err := removeAt(dir, base); err != nil {
				return err
			}
			err = unix.Mkdirat(dir, base, 0o700)
		} else {
			err = nil
		}
	}
	if err != nil {
		return err
	}
	how := *resolveBeneath
	how.Flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat2(dir, base, &how)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fchown(fd, uid, uid); err != nil {
		return err
	}
	return unix.Fchmod(fd, mode)
}

// writeFile creates the file base in dir (nothing may be there) with the
// entry's content, owner and mode.
func writeFile(dir int, base string, uid int, e *layerEntry, content io.Reader) error {
	how := *resolveBeneath
	how.Flags = unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
	how.Mode = 0o600
	defer holdForks()()
	fd, err := unix.Openat2(dir, base, &how)
	if err != nil {
		return describe(err)
	}
	f := os.NewFile(uintptr(fd), base)
	defer f.Close()
	if n, err := io.Copy(onlyWriter{f}, content); err != nil {
		return describe(err)
	} else if n != e.size {
		return fmt.Errorf("content ends at %d of %d bytes", n, e.size)
	}
	if err := unix.Fchown(fd, uid, uid); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, e.mode); err != nil {
		return err
	}
	return f.Close()
}

// setTimes sets the modification time of base in dir (not following a
// symlink) to the entry's; the access time too.
func setTimes(dir int, base string, e *layerEntry) error {
	ts := unix.NsecToTimespec(time.Unix(e.sec, e.nsec).UnixNano())
	return unix.UtimesNanoAt(dir, base, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
}

// removeAt removes base in dir, a whole tree if it is a directory, never
// following a symlink. Nothing there is not an error.
func removeAt(dir int, base string) error {
	err := unix.Unlinkat(dir, base, 0)
	switch {
	case err == nil || errors.Is(err, unix.ENOENT):
		return nil
	case !errors.Is(err, unix.EISDIR):
		return err
	}
	how := *resolveBeneath
	how.Flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	sub, err := unix.Openat2(dir, base, &how)
	if err != nil {
		return err
	}
	err = clearDir(sub)
	unix.Close(sub)
	if err != nil {
		return err
	}
	return unix.Unlinkat(dir, base, unix.AT_REMOVEDIR)
}

// clearDir removes everything in the open directory dir, depth first,
// with one more fd open whatever the tree's depth: it goes down into a
// directory by name (beneath, never through a symlink or onto another
// mount) and back up by "..", closing the one it leaves. Nothing of the
// request runs meanwhile, so nothing moves a directory under it. What it
// keeps is the names of the directories still to remove.
func clearDir(dir int) error {
	type frame struct {
		name string   // of this directory in its parent
		dirs []string // left to remove in it
	}
	cur, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer func() { unix.Close(cur) }()
	// visit removes what is not a directory in cur and returns the
	// directories.
	visit := func() ([]string, error) {
		names, err := readDirNames(cur)
		if err != nil {
			return nil, err
		}
		var dirs []string
		for _, name := range names {
			err := unix.Unlinkat(cur, name, 0)
			switch {
			case err == nil || errors.Is(err, unix.ENOENT):
			case errors.Is(err, unix.EISDIR):
				dirs = append(dirs, name)
			default:
				return nil, err
			}
		}
		return dirs, nil
	}
	dirs, err := visit()
	if err != nil {
		return err
	}
	stack := []frame{{dirs: dirs}}
	how := *resolveBeneath
	how.Flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	for {
		top := &stack[len(stack)-1]
		if n := len(top.dirs); n > 0 {
			name := top.dirs[n-1]
			top.dirs = top.dirs[:n-1]
			next, err := unix.Openat2(cur, name, &how)
			if err != nil {
				return err
			}
			unix.Close(cur)
			cur = next
			dirs, err := visit()
			if err != nil {
				return err
			}
			stack = append(stack, frame{name: name, dirs: dirs})
			continue
		}
		if len(stack) == 1 {
			return nil
		}
		// cur is empty: up, and remove it.
		up, err := unix.Openat(cur, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		unix.Close(cur)
		cur = up
		if err := unix.Unlinkat(cur, top.name, unix.AT_REMOVEDIR); err != nil {
			return err
		}
		stack = stack[:len(stack)-1]
	}
}

// reset empties the workspace and /tmp and renews the output budget, for
// a request that starts over.
func (rq *request) reset() error {
	// The Go build cache's overlay goes, and comes back empty. The
	// sandboxes built ahead hold clones of the old one: they go first.
	lower := rq.goLower
	if lower != "" {
		rq.discardCells()
	}
	if err := rq.unmountGoCache(); err != nil {
		return err
	}
	for _, d := range []struct {
		dir  string
		mode uint32
	}{{rq.ws, 0o755}, {rq.tmp, 0o1777}} {
		fd, err := unix.Open(d.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		err = clearDir(fd)
		if err == nil {
			err = unix.Fchown(fd, rq.taskUID, rq.taskUID)
		}
		if err == nil {
			err = unix.Fchmod(fd, d.mode)
		}
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("reset %s: %w", d.dir, err)
		}
	}
	rq.budget = runner.NewBudget(rq.limits.RequestOutputLimit)
	if lower != "" {
		return rq.mountGoCache(lower)
	}
	return nil
}

// spendOutput takes a replayed step's output from the request's output
// budget, as its run did, so later steps get what they would have.
func (rq *request) spendOutput(sr StepResult) {
	for _, r := range sr.Results {
		rq.budget.Spend(int64(len(r.Stdout) + len(r.Stderr)))
	}
}
