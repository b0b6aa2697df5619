//go:build !linux

package svc

import (
	"os"
	"time"
)

// nofollow is 0: other systems open stored blobs as they find them.
const nofollow = 0

// lockDir opens the lock file at path. Other systems run no sandboxes, and
// the file store is not locked there.
func lockDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}

// accessTime returns the modification time: the access time is not read
// on other systems.
func accessTime(fi os.FileInfo) time.Time { return fi.ModTime() }

// startWriteback does nothing: the fsync does all the work.
func startWriteback(f *os.File, off, n int64) {}
