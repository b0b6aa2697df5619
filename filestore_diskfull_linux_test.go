package svc_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/svc-sandbox/svc"
)

// TestFileStoreDiskFull: a store whose disk fills up long before its
// quota says that its disk is full, not that the store is (it holds far
// less than FILESTORE_MAX_BYTES), and the errno stays in the cause. The
// disk is a real 1 MiB tmpfs.
func TestFileStoreDiskFull(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("no tmpfs to fill: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	fs, err := svc.OpenFileStore(svc.FileStoreConfig{Dir: dir + "/files"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	if _, _, err := fs.Put(context.Background(), strings.NewReader("small"), "small.txt", ""); err != nil {
		t.Fatal(err)
	}
	_, _, err = fs.Put(context.Background(), bytes.NewReader(bytes.Repeat([]byte("x"), 2<<20)), "big.bin", "")
	var e *svc.Error
	if !errors.As(err, &e) || e.Code != svc.CodeCapacityExhausted {
		t.Fatalf("Put on a full disk: %v", err)
	}
	if !strings.Contains(e.Msg, "the disk of the file store is full") || !strings.Contains(e.Msg, "holds 5 of its 4294967296 bytes") {
		t.Errorf("message %q", e.Msg)
	}
	if !errors.Is(err, unix.ENOSPC) {
		t.Errorf("the cause is not ENOSPC: %v", e.Err)
	}
}
