package svc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// offPath are commands of toolchains installed off the task PATH, by
// their place in the root filesystem: Go's official distribution in
// /usr/local/go. The sandbox finds each as /usr/local/bin/<name>, a
// symbolic link to it (so the command still finds its root from its own
// path).
var offPath = []string{"usr/local/go/bin/go", "usr/local/go/bin/gofmt"}

// localBin makes, in runDir, the /usr/local/bin the sandboxes see where
// the root filesystem has toolchains off the task PATH (offPath): a
// read-only overlay of the root filesystem's own /usr/local/bin and a
// directory of links to those commands. It returns "" when there is
// nothing to add (no such toolchain, or a command of that name on the
// PATH already).
func localBin(rootfs, runDir string) (string, error) {
	own := filepath.Join(rootfs, "usr/local/bin")
	if fi, err := os.Stat(own); err != nil || !fi.IsDir() {
		return "", nil // nothing to lay the links over
	}
	var add []string
	for _, cmd := range offPath {
		fi, err := os.Stat(filepath.Join(rootfs, cmd))
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if _, err := os.Lstat(filepath.Join(own, filepath.Base(cmd))); errors.Is(err, fs.ErrNotExist) {
			add = append(add, cmd)
		}
	}
	if len(add) == 0 {
		return "", nil
	}
	if strings.ContainsAny(own, ":,\\") {
		return "", fmt.Errorf("root filesystem %s: an overlay cannot name its /usr/local/bin", rootfs)
	}
	links, merged := filepath.Join(runDir, ".toolbin"), filepath.Join(runDir, ".localbin")
	for _, d := range []string{links, merged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return "", fmt.Errorf("/usr/local/bin of the sandboxes: %w", err)
		}
	}
	for _, cmd := range add {
		if err := os.Symlink("/"+cmd, filepath.Join(links, filepath.Base(cmd))); err != nil {
			return "", fmt.Errorf("/usr/local/bin of the sandboxes: %w", err)
		}
	}
	// Two lower layers and no upper one: a read-only union, the links
	// first.
	data := "lowerdir=" + links + ":" + own
	if err := unix.Mount("svc-localbin", merged, "overlay", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		return "", fmt.Errorf("/usr/local/bin of the sandboxes: mount overlay: %w", err)
	}
	return merged, nil
}
