package cgroup

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A place is a cgroup directory as system calls reach it: rel relative to
// fd, a directory held open by [Group.Hold], or unix.AT_FDCWD and the
// full path. path is the full path, for messages.
type place struct {
	fd   int
	rel  string
	path string
}

// pathPlace is the place of dir reached by its path.
func pathPlace(dir string) place { return place{unix.AT_FDCWD, dir, dir} }

// file returns the path of the directory's file name relative to p.fd.
func (p place) file(name string) string { return p.rel + "/" + name }

// writeFile writes val to the existing cgroup file name of the directory
// at d in one write (open O_WRONLY, never O_CREAT; kernfs has nothing to
// truncate). The error names the file and wraps the errno. Cgroup files
// are read and written with plain system calls: through package os, each
// open would also register the file with the runtime's poller, as some
// cgroup files can be polled.
func writeFile(d place, name, val string) error {
	fd, err := unix.Openat(d.fd, d.file(name), unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		var n int
		n, err = unix.Write(fd, []byte(val))
		if err == nil && n != len(val) {
			err = io.ErrShortWrite
		}
		if cerr := unix.Close(fd); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("cgroup: write %s: %s %q: %w", name, filepath.Join(d.path, name), val, err)
	}
	return nil
}

// readFile returns the contents of the cgroup file dir/name.
func readFile(dir, name string) (string, error) {
	return readFileAt(unix.AT_FDCWD, dir, name)
}

// readFileAt returns the contents of the file name of the directory dir,
// opened at dirfd (or unix.AT_FDCWD): its path is walked once for all
// the files read through it.
func readFileAt(dirfd int, dir, name string) (string, error) {
	p := filepath.Join(dir, name)
	at := p
	if dirfd != unix.AT_FDCWD {
		at = name
	}
	fd, err := unix.Openat(dirfd, at, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("cgroup: read %s: %s: %w", name, p, err)
	}
	defer unix.Close(fd)
	var buf [4096]byte
	var out []byte
	for {
		n, err := unix.Read(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("cgroup: read %s: %s: %w", name, p, err)
		}
		if n == 0 {
			return string(out), nil
		}
		out = append(out, buf[:n]...)
	}
}

// A dirFD is a group directory opened for reading several of its files.
// Opening it is also the check that the group exists. Files opened ahead
// (open) are read in place; others are opened for each read.
type dirFD struct {
	fd    int
	path  string
	files map[string]openFile
}

// openFile is a file of a dirFD opened ahead, or why it could not be.
type openFile struct {
	fd  int
	err error
}

func openDir(d place) (dirFD, error) {
	fd, err := unix.Openat(d.fd, d.rel, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return dirFD{}, fmt.Errorf("cgroup: open %s: %w", d.path, err)
	}
	return dirFD{fd, d.path, make(map[string]openFile)}, nil
}

// open opens d's file name ahead of its reads; an error is the reads'.
func (d dirFD) open(name string) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		err = fmt.Errorf("cgroup: read %s: %s: %w", name, filepath.Join(d.path, name), err)
	}
	d.files[name] = openFile{fd, err}
}

func (d dirFD) close() {
	for _, f := range d.files {
		if f.err == nil {
			unix.Close(f.fd)
		}
	}
	unix.Close(d.fd)
}

// read returns the contents of d's file name.
func (d dirFD) read(name string) (string, error) {
	f, ok := d.files[name]
	switch {
	case !ok:
		return readFileAt(d.fd, d.path, name)
	case f.err != nil:
		return "", f.err
	}
	s, err := preadAll(f.fd)
	if err != nil {
		return "", fmt.Errorf("cgroup: read %s: %s: %w", name, filepath.Join(d.path, name), err)
	}
	return s, nil
}

// preadAll reads the cgroup file fd from its start. A cgroup file's text
// is made whole by one call of its show function, and a read with room
// for all of it returns all of it: a read that leaves room is the last.
func preadAll(fd int) (string, error) {
	var buf [4096]byte
	var out []byte
	for off := int64(0); ; {
		n, err := unix.Pread(fd, buf[:], off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		out = append(out, buf[:n]...)
		if n < len(buf) {
			return string(out), nil
		}
		off += int64(n)
	}
}

// readInt reads d's file name holding one integer; nil, nil when it does
// not exist.
func (d dirFD) readInt(name string) (*int64, error) {
	s, err := d.read(name)
	return parseInt(s, err, d.path, name)
}

// readFlat reads d's flat keyed file name; nil, nil when it does not
// exist.
func (d dirFD) readFlat(name string) (map[string]int64, error) {
	s, err := d.read(name)
	return parseFlat(s, err, d.path, name)
}

// leaf reports whether d has no child group.
func (d dirFD) leaf() bool {
	var st unix.Stat_t
	return unix.Fstat(d.fd, &st) == nil && leaf(&st)
}

// leaf reports whether the cgroup directory st describes has no child
// group: on cgroupfs (kernfs) a directory's link count is 2 plus its
// subdirectories, so a leaf, the common case, needs no listing of its
// files.
func leaf(st *unix.Stat_t) bool { return st.Nlink == 2 }

// readInt reads a file holding one integer; nil, nil when it does not exist.
func readInt(dir, name string) (*int64, error) {
	s, err := readFile(dir, name)
	return parseInt(s, err, dir, name)
}

// readFlat reads a flat keyed file; nil, nil when it does not exist.
func readFlat(dir, name string) (map[string]int64, error) {
	s, err := readFile(dir, name)
	return parseFlat(s, err, dir, name)
}

// parseInt parses what a read of dir/name returned: s, or err.
func parseInt(s string, err error, dir, name string) (*int64, error) {
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("cgroup: read %s: %w", filepath.Join(dir, name), err)
	}
	return &i, nil
}

// parseFlat parses what a read of the flat keyed file dir/name returned.
func parseFlat(s string, err error, dir, name string) (map[string]int64, error) {
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m, err := parseFlatKeyed(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
	}
	return m, nil
}

// readProcs returns the pids in dir/cgroup.procs.
func readProcs(dir string) ([]int, error) {
	s, err := readFile(dir, "cgroup.procs")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(s) {
		p, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("cgroup: read %s: %w", filepath.Join(dir, "cgroup.procs"), err)
		}
		pids = append(pids, p)
	}
	return pids, nil
}

// subtree returns dir and its descendant cgroup directories, deepest first
// (children before their parent). A missing dir yields nothing.
func subtree(dir string) ([]string, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err == nil && leaf(&st) {
		return []string{dir}, nil
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		sub, err := subtree(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
	}
	return append(out, dir), nil
}

// lookup returns the value of key in m, nil when m or the key is missing.
func lookup(m map[string]int64, key string) *int64 {
	v, ok := m[key]
	if !ok {
		return nil
	}
	return &v
}
