package svc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// resolveBeneath keeps every lookup inside the workspace: no "..", no
// symlink or magic link (followed by a racing task or not), no crossing
// into another mount.
var resolveBeneath = &unix.OpenHow{
	Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
}

// placeFiles writes files into the workspace ws, owned by uid, mode 0644:
// inline contents, or stored ones copied from their open files in stored.
// Paths were validated (relative, normalized, no ".."); every lookup still
// goes through openat2 beneath the workspace, so a symlink, FIFO, socket
// or magic link left by an earlier step is refused, never followed.
func placeFiles(ws string, uid int, files map[string]File, stored storedFiles) error {
	if len(files) == 0 {
		return nil
	}
	root, err := unix.Open(ws, unix.O_DIRECTORY|unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("files: open workspace: %w", err)
	}
	defer unix.Close(root)
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		fill := func(dst *os.File) error {
			_, err := io.WriteString(dst, files[p].Content)
			return err
		}
		if id := files[p].FileID; id != "" {
			src, ok := stored[id]
			if !ok {
				return fmt.Errorf("files[%q]: file_id %s was not opened", p, id)
			}
			fill = func(dst *os.File) error { return copyStored(dst, src.f, src.size, copyAny) }
		}
		if err := placeFile(root, p, uid, fill); err != nil {
			return fmt.Errorf("files[%q]: %w", p, err)
		}
	}
	return nil
}

// placeFile creates or truncates the regular file p beneath root and
// writes its content with fill.
func placeFile(root int, p string, uid int, fill func(*os.File) error) error {
	dir, err := mkdirBeneath(root, p, uid)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	base := p[strings.LastIndexByte(p, '/')+1:]
	how := *resolveBeneath
	// O_NONBLOCK: opening a FIFO must not hang; it is refused below.
	how.Flags = unix.O_WRONLY | unix.O_CREAT | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	how.Mode = 0o644
	defer holdForks()()
	fd, err := unix.Openat2(dir, base, &how)
	if err != nil {
		return describe(err)
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errors.New("the path exists and is not a regular file")
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	if err := fill(f); err != nil {
		if errors.Is(err, unix.ENOSPC) {
			return errors.New("the workspace is full")
		}
		return err
	}
	if err := unix.Fchown(fd, uid, uid); err != nil {
		return err
	}
	return unix.Fchmod(fd, 0o644)
}

// mkdirBeneath makes the parent directories of p, owned by uid, and
// returns the innermost one opened.
func mkdirBeneath(root int, p string, uid int) (int, error) {
	how := *resolveBeneath
	how.Flags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	dir, err := unix.Openat2(root, ".", &how)
	if err != nil {
		return -1, err
	}
	comps := strings.Split(p, "/")
	for _, c := range comps[:len(comps)-1] {
		err := unix.Mkdirat(dir, c, 0o755)
		switch {
		case err == nil:
			if err := unix.Fchownat(dir, c, uid, uid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				unix.Close(dir)
				return -1, err
			}
		case !errors.Is(err, unix.EEXIST):
			unix.Close(dir)
			return -1, describe(err)
		}
		next, err := unix.Openat2(dir, c, &how)
		if errors.Is(err, unix.ENOTDIR) && isSymlinkAt(dir, c) {
			// O_NOFOLLOW|O_DIRECTORY on a symlink says ENOTDIR; say why.
			err = unix.ELOOP
		}
		unix.Close(dir)
		if err != nil {
			return -1, describe(err)
		}
		dir = next
	}
	return dir, nil
}

// isSymlinkAt reports whether name in dir is a symlink (for messages only).
func isSymlinkAt(dir int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// describe turns the errnos of a refused lookup into a reason.
func describe(err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return errors.New("a component of the path is a symlink; refusing to follow it")
	case errors.Is(err, unix.ENOTDIR):
		return errors.New("a component of the path is not a directory")
	case errors.Is(err, unix.EXDEV):
		return errors.New("the path leaves the workspace")
	case errors.Is(err, unix.ENXIO):
		return errors.New("the path exists and is not a regular file")
	case errors.Is(err, unix.ENOSPC):
		return errors.New("the workspace is full")
	}
	return err
}

// How copyStored may copy, a set of bits; tests pick one at a time.
const (
	copyFileRange = 1 << iota // copy_file_range(2): in the kernel, on one filesystem
	copySendfile              // sendfile(2): in the kernel, across filesystems
	copyRead                  // pread(2) and write(2)

	copyAny = copyFileRange | copySendfile | copyRead
)

// copyStored writes the n bytes of src, from its start, at dst's offset.
// It reads src at explicit offsets and never moves src's own offset, so one
// open stored file serves any number of placements. The copy stays in the
// kernel where it can: copy_file_range, else sendfile, else read and write.
func copyStored(dst, src *os.File, n int64, how int) error {
	var off int64 // of src; the kernel calls advance dst's offset
	for _, m := range []int{copyFileRange, copySendfile} {
		if how&m == 0 {
			continue
		}
		for off < n {
			var c int
			var err error
			chunk := int(min(n-off, 1<<30))
			if m == copyFileRange {
				c, err = unix.CopyFileRange(int(src.Fd()), &off, int(dst.Fd()), nil, chunk, 0)
			} else {
				c, err = unix.Sendfile(int(dst.Fd()), int(src.Fd()), &off, chunk)
			}
			switch {
			case errors.Is(err, unix.EINTR):
				continue
			case errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) ||
				errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EBADF) || errors.Is(err, unix.EPERM):
				// Not between these files: try the next way from off.
				c = -1
			case err != nil:
				return err
			case c == 0:
				return fmt.Errorf("the stored file ended at %d of %d bytes", off, n)
			}
			if c < 0 {
				break
			}
		}
		if off == n {
			return nil
		}
	}
	if how&copyRead == 0 {
		return errors.New("no way to copy the stored file")
	}
	c, err := io.Copy(onlyWriter{dst}, io.NewSectionReader(src, off, n-off))
	if err == nil && c != n-off {
		err = fmt.Errorf("the stored file ended at %d of %d bytes", off+c, n)
	}
	return err
}

// onlyWriter hides dst's ReadFrom so that io.Copy reads and writes.
type onlyWriter struct{ io.Writer }

// openOutput opens a task's output in the workspace (workspace.openOutput).
func (rq *request) openOutput(p string) (outputReader, int64, error) { return openOutput(rq.ws, p) }

// openBeneath opens p below the directory root for reading, as
// openOutput and openStdin do: no symlink at any component, not leaving
// root's mount, never waiting (O_NONBLOCK), retried where a rename raced
// the lookup (EAGAIN, or a lease no process is left to hold) or a signal
// came (EINTR).
func openBeneath(root int, p string) (int, error) {
	how := *resolveBeneath
	how.Flags = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	for try := 0; ; try++ {
		fd, err := unix.Openat2(root, p, &how)
		if (errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR)) && try < 8 {
			continue
		}
		return fd, err
	}
}

// openOutput opens the regular file p beneath the workspace ws for
// reading, with one openat2 from a descriptor of ws: no "..", no symlink
// at any component (the last included), no magic link, no other mount.
// No path is walked on the host, so a component a task swapped for a
// symlink is refused, never followed. It does not wait: a FIFO opens at
// once (O_NONBLOCK) and is then refused, as is anything but a regular
// file; a terminal does not become the service's (O_NOCTTY). A device
// cannot even be opened: the workspace is mounted nodev.
func openOutput(ws, p string) (outputReader, int64, error) {
	root, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("open workspace: %w", err)
	}
	defer unix.Close(root)
	fd, err := openBeneath(root, p)
	switch {
	case err == nil:
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return nil, 0, fmt.Errorf("%w: %w", errOutputNotFound, err)
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV), errors.Is(err, unix.ENXIO),
		errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM), errors.Is(err, unix.ENODEV),
		errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EAGAIN), errors.Is(err, unix.ETXTBSY):
		// A symlink, another mount, a socket, a device on the nodev
		// mount, or a file that would not open without waiting.
		return nil, 0, fmt.Errorf("%w: %w", errOutputNotRegular, err)
	default:
		return nil, 0, err
	}
	f := os.NewFile(uintptr(fd), p)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, 0, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return nil, 0, fmt.Errorf("%w: mode %#o", errOutputNotRegular, st.Mode)
	}
	return f, st.Size, nil
}

// holdForks keeps this process from forking until the function it returns
// is called: around the life of a descriptor that has a workspace file
// open for writing. A child forked meanwhile would hold that file open
// for writing until its own execve, and a task that runs the file then
// would fail with ETXTBSY (Go issue 22315), a correct program failing for
// what the process embedding svc happened to do at the time. Every fork
// of a Go process (os/exec, syscall.ForkExec) holds syscall.ForkLock for
// writing; this holds it for reading, as its documentation asks of code
// that makes descriptors a child must not inherit. Nothing under it may
// fork or wait for a goroutine that forks.
func holdForks() (release func()) {
	syscall.ForkLock.RLock()
	return syscall.ForkLock.RUnlock
}

// taskStreams are the files of a task's stream paths (Task.StdinPath,
// StdoutPath, StderrPath), opened by the service before the task starts;
// nil fields for the streams that have none. When the stdout and the
// stderr name one file, stderr is nil and merged is set: the task's
// stderr is its stdout (runner.Task.MergeOutput). A task with any of
// them takes a cell built ahead, as any other does: its stdin file goes
// to its task process with its command.
type taskStreams struct {
	stdin, stdout, stderr *os.File
	merged                bool
}

func (ts *taskStreams) close() {
	if ts == nil {
		return
	}
	for _, f := range []*os.File{ts.stdin, ts.stdout, ts.stderr} {
		if f != nil {
			f.Close()
		}
	}
}

// A streamError is why a task's stream path could not be opened: the
// path's fault (nothing there, not a regular file, a symlink), not the
// host's. The task does not start, and its result says so as for a
// command that is not found.
type streamError struct {
	field, path string
	err         error
}

func (e *streamError) Error() string {
	return fmt.Sprintf("%s %s: %v", e.field, quoteForMsg(e.path), e.err)
}

func (e *streamError) Unwrap() error { return e.err }

// stdinRoot returns a detached clone of the workspace ws (open_tree, not
// recursive), whose root is ws itself: a file opened beneath it
// (openStdin) is named from the workspace's root ("/in.txt") in the
// task's /proc/self/fd/0, not by the host's path of the workspace. Each
// file opened through it holds it; it is dissolved, at the cost of an
// expedited RCU grace period, once the descriptor returned and the last
// of them are closed: one clone serves every stdin of a step.
func stdinRoot(ws string) (int, error) {
	root, err := unix.OpenTree(unix.AT_FDCWD, ws, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("stdin_path: open workspace: %w", err)
	}
	return root, nil
}

// openStdin opens the file p beneath root, the workspace's clone
// (stdinRoot), for a task's stdin: read-only, with one openat2, following
// no symlink at any component (the last included) nor leaving the
// workspace's mount, so a link an earlier step planted never reaches a
// host file. It never waits: a FIFO opens at once (O_NONBLOCK) and is
// refused with anything else that is not a regular file; the
// descriptor the task gets is blocking.
func openStdin(root int, p string) (*os.File, error) {
	fd, err := openBeneath(root, p)
	switch {
	case err == nil:
	case errors.Is(err, unix.ENOENT):
		return nil, &streamError{"stdin_path", p, errors.New("no such file in the workspace")}
	case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV), errors.Is(err, unix.ENXIO):
		return nil, &streamError{"stdin_path", p, describe(err)}
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM), errors.Is(err, unix.ENODEV),
		errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EAGAIN), errors.Is(err, unix.ETXTBSY):
		return nil, &streamError{"stdin_path", p, errors.New("not a regular file that opens without waiting")}
	default:
		return nil, fmt.Errorf("stdin_path %s: %w", quoteForMsg(p), err)
	}
	f, err := regularFile(fd, p)
	if err != nil {
		return nil, &streamError{"stdin_path", p, err}
	}
	return f, nil
}

// regularFile checks that fd, opened non-blocking, is a regular file,
// makes it blocking and returns it; else it closes fd.
func regularFile(fd int, p string) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, errors.New("the path exists and is not a regular file")
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), p), nil
}

// openStreamOut creates or truncates the file p beneath the workspace ws
// for a task's stdout or stderr (field), owned by uid with mode 0644, and
// its missing directories, as placeFile does: every lookup goes through
// openat2 beneath the workspace, so a symlink at any component, a FIFO
// or anything else that is not a regular file is refused, never followed
// or waited on. The task never has this descriptor: its stream is a
// pipe, which the service splices into the file.
//
// The service holds the file open for writing while the task runs. A
// child the embedding process forks meanwhile holds it too until its
// own execve (see holdForks, held here only for the open); a later step
// that runs the file at that moment would fail with ETXTBSY.
func openStreamOut(ws, field, p string, uid int) (*os.File, error) {
	root, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	defer unix.Close(root)
	dir, err := mkdirBeneath(root, p, uid)
	if err != nil {
		return nil, pathFault(field, p, err)
	}
	defer unix.Close(dir)
	base := p[strings.LastIndexByte(p, '/')+1:]
	how := *resolveBeneath
	how.Flags = unix.O_WRONLY | unix.O_CREAT | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	how.Mode = 0o644
	release := holdForks()
	fd, err := unix.Openat2(dir, base, &how)
	release()
	if err != nil {
		return nil, pathFault(field, p, describe(err))
	}
	f, err := regularFile(fd, p)
	if err != nil {
		return nil, &streamError{field, p, err}
	}
	for _, step := range []func() error{
		func() error { return f.Truncate(0) },
		func() error { return unix.Fchown(fd, uid, uid) },
		func() error { return unix.Fchmod(fd, 0o644) },
	} {
		if err := step(); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s %s: %w", field, quoteForMsg(p), describe(err))
		}
	}
	return f, nil
}

// pathFault makes err, from a lookup or creation beneath the workspace,
// a streamError when the path is at fault (describe's reasons, a
// directory where a file goes), and keeps any other as the host's.
func pathFault(field, p string, err error) error {
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EISDIR), errors.Is(err, unix.ENOSPC),
		errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV), errors.Is(err, unix.ENXIO):
		return &streamError{field, p, describe(err)}
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return &streamError{field, p, err}
	}
	var errno unix.Errno
	if !errors.As(err, &errno) {
		// describe's reasons: the path's fault.
		return &streamError{field, p, err}
	}
	return fmt.Errorf("%s %s: %w", field, quoteForMsg(p), err)
}

// openStreams opens the stream files of the tasks of step in the
// workspace ws, owned by uid, into streams, for each task that results
// does not already end: every stdin first (through one clone of the
// workspace for the step, stdinRoot), then every stdout and stderr,
// so that an output of one task that another reads is truncated after
// the reader has it open (the reader sees the file grow as the writer
// writes). A task whose file could not be opened gets its result: exit
// code 127 and the reason on its stderr for the path's fault, as for a
// command that is not found; infrastructure_failure for the host's.
func openStreams(ws string, uid int, step *stepPlan, results []Result, streams []*taskStreams) {
	fail := func(i int, err error) {
		streams[i].close()
		streams[i] = nil
		var se *streamError
		if errors.As(err, &se) {
			results[i] = Result{Outcome: OutcomeExited, ExitCode: 127, Stderr: validUTF8("svc: " + err.Error() + "\n")}
			return
		}
		results[i] = Result{Outcome: OutcomeInfrastructureFailure, Error: err.Error()}
	}
	root := -1
	defer func() {
		if root >= 0 {
			unix.Close(root)
		}
	}()
	for i := range step.tasks {
		t := &step.tasks[i]
		if results[i].Outcome != "" || t.StdinPath == "" {
			continue
		}
		if root < 0 {
			var err error
			if root, err = stdinRoot(ws); err != nil {
				fail(i, err)
				continue
			}
		}
		f, err := openStdin(root, t.StdinPath)
		if err != nil {
			fail(i, err)
			continue
		}
		streams[i] = &taskStreams{stdin: f}
	}
	for i := range step.tasks {
		t := &step.tasks[i]
		if results[i].Outcome != "" || t.StdoutPath == "" && t.StderrPath == "" {
			continue
		}
		ts := streams[i]
		if ts == nil {
			ts = &taskStreams{}
			streams[i] = ts
		}
		var err error
		if t.StdoutPath != "" {
			ts.stdout, err = openStreamOut(ws, "stdout_path", t.StdoutPath, uid)
		}
		switch {
		case err != nil:
		case t.StderrPath == t.StdoutPath:
			ts.merged = true
		case t.StderrPath != "":
			ts.stderr, err = openStreamOut(ws, "stderr_path", t.StderrPath, uid)
		}
		if err != nil {
			fail(i, err)
		}
	}
}
