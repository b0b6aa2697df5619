package svc

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// resolveBeneath keeps every lookup inside the workspace: no "..", no
// symlink or magic link (followed by a racing task or not), no crossing
// into another mount.
var resolveBeneath = &unix.OpenHow{
	Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
}

// placeFiles writes files into the workspace ws, owned by uid. Paths were
// validated (relative, normalized, no ".."); every lookup still goes
// through openat2 beneath the workspace, so a symlink, FIFO, socket or
// magic link left by an earlier step is refused, never followed.
func placeFiles(ws string, uid int, files map[string]File) error {
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
		if err := placeFile(root, p, uid, []byte(files[p].Content)); err != nil {
			return fmt.Errorf("files[%q]: %w", p, err)
		}
	}
	return nil
}

func placeFile(root int, p string, uid int, content []byte) error {
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
	if _, err := f.Write(content); err != nil {
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
		unix.Close(dir)
		if err != nil {
			return -1, describe(err)
		}
		dir = next
	}
	return dir, nil
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
