package svc

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// nofollow opens a stored blob without following a symlink put in its
// place (cache_dir.go).
const nofollow = unix.O_NOFOLLOW

// lockDir takes an exclusive flock of the file at path, creating it; the
// lock lasts until the returned file is closed.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// accessTime returns the access time of the file fi describes.
func accessTime(fi os.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Atim.Unix())
	}
	return fi.ModTime()
}

// startWriteback begins writing n bytes of f from off to disk, without
// waiting for them (sync_file_range SYNC_FILE_RANGE_WRITE): a later fsync
// then has less to wait for. A failure only leaves the work to the fsync.
func startWriteback(f *os.File, off, n int64) {
	if n > 0 {
		unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
	}
}
