package svc

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// imageFiles identify the root filesystem the sandboxes see: its
// distribution, its installed packages and a Go toolchain outside them.
var imageFiles = []string{
	"etc/os-release",
	"var/lib/dpkg/status",
	"usr/local/go/VERSION",
}

// DetectImage describes the root filesystem rootfs whose system
// directories the sandboxes see (Config.RootFS).
//
// id is a short hex digest (16 characters) of the files that identify the
// image: /etc/os-release, the dpkg status file and /usr/local/go/VERSION,
// each as far as it exists; a package installed or removed gives a new id.
//
// toolchains are name-version strings, sorted: "gcc-12" and "g++-12" for
// each /usr/bin/gcc-N and /usr/bin/g++-N, "python-3.11" for each
// /usr/bin/pythonX.Y, and "go-1.26.8" for /usr/local/go and each
// /usr/lib/go-*, read from their VERSION file.
//
// Missing files are not errors; a file that exists but cannot be read is.
func DetectImage(rootfs string) (id string, toolchains []string, err error) {
	h := sha256.New()
	for _, name := range imageFiles {
		b, err := os.ReadFile(filepath.Join(rootfs, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("detect image: %w", err)
		}
		// Name and length frame each file, so no two sets of contents
		// hash alike.
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(b))
		h.Write(b)
	}
	id = hex.EncodeToString(h.Sum(nil))[:16]
	if toolchains, err = detectToolchains(rootfs); err != nil {
		return "", nil, err
	}
	return id, toolchains, nil
}

var (
	ccName     = regexp.MustCompile(`^(gcc|g\+\+)-([0-9]+)$`)
	pythonName = regexp.MustCompile(`^python([0-9]+\.[0-9]+)$`)
)

func detectToolchains(rootfs string) ([]string, error) {
	var out []string
	entries, err := os.ReadDir(filepath.Join(rootfs, "usr/bin"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("detect toolchains: %w", err)
	}
	for _, e := range entries {
		if m := ccName.FindStringSubmatch(e.Name()); m != nil {
			out = append(out, m[1]+"-"+m[2])
		}
		if m := pythonName.FindStringSubmatch(e.Name()); m != nil {
			out = append(out, "python-"+m[1])
		}
	}
	goRoots, _ := filepath.Glob(filepath.Join(rootfs, "usr/lib/go-*"))
	for _, root := range append([]string{filepath.Join(rootfs, "usr/local/go")}, goRoots...) {
		v, err := goVersion(filepath.Join(root, "VERSION"))
		if err != nil {
			return nil, err
		}
		if v != "" {
			out = append(out, "go-"+v)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// goVersion returns the version of a Go VERSION file ("go1.26.8" on its
// first line gives "1.26.8"), or "" when there is none.
func goVersion(file string) (string, error) {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("detect toolchains: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return "", sc.Err()
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "go")
	if !ok || v == "" {
		return "", nil
	}
	return v, nil
}
