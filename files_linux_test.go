package svc

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// copyStored, each way on its own, between files of one filesystem and
// (when /dev/shm is a tmpfs) across filesystems, from a shared src.
func TestCopyStored(t *testing.T) {
	content := binaryContent(3*MiB+7, 10)
	src, err := os.CreateTemp(t.TempDir(), "src")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Write(content); err != nil {
		t.Fatal(err)
	}
	src.Seek(5, io.SeekStart) // copyStored ignores src's offset
	dirs := []string{t.TempDir()}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "svc-test-")
		if err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			dirs = append(dirs, d)
		}
	}
	for _, dir := range dirs {
		for _, how := range []int{copyFileRange | copyRead, copySendfile, copyRead, copyAny} {
			dst, err := os.CreateTemp(dir, "dst")
			if err != nil {
				t.Fatal(err)
			}
			dst.WriteString("prefix")
			err = copyStored(dst, src, int64(len(content)), how)
			dst.Close()
			if err != nil {
				t.Fatalf("%s, how %b: %v", dir, how, err)
			}
			got, _ := os.ReadFile(dst.Name())
			if !bytes.Equal(got, append([]byte("prefix"), content...)) {
				t.Errorf("%s, how %b: copy differs (%d bytes)", dir, how, len(got))
			}
		}
	}
	if off, _ := src.Seek(0, io.SeekCurrent); off != 5 {
		t.Errorf("src offset moved to %d", off)
	}
	// A src shorter than said is an error, not a short file.
	dst, _ := os.CreateTemp(t.TempDir(), "dst")
	defer dst.Close()
	if err := copyStored(dst, src, int64(len(content))+1, copyAny); err == nil {
		t.Error("short src: no error")
	}
}

// TestRemoveEmpty: a request's directory goes with one rmdir when its
// tmpfs is unmounted and it is empty, and whole when something is left.
func TestRemoveEmpty(t *testing.T) {
	for _, leftover := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "rq")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if leftover {
			if err := os.MkdirAll(filepath.Join(dir, "tmp", "d"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "tmp", "f"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := removeEmpty(dir); err != nil {
			t.Errorf("leftover %v: %v", leftover, err)
		}
		if _, err := os.Lstat(dir); !os.IsNotExist(err) {
			t.Errorf("leftover %v: %s still there (%v)", leftover, dir, err)
		}
		if err := removeEmpty(dir); err != nil {
			t.Errorf("removing it again: %v, want nil", err)
		}
	}
}
