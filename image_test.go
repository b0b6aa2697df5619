package svc_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/svc-sandbox/svc"
)

func TestDetectImage(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/os-release", "ID=debian\nVERSION_ID=\"12\"\n")
	write("var/lib/dpkg/status", "Package: gcc-12\nStatus: install ok installed\n")
	for _, f := range []string{"gcc-12", "g++-12", "gcc-ar-12", "gcc", "python3.11", "python3", "python3.11-config", "go"} {
		write("usr/bin/"+f, "")
	}
	write("usr/local/go/VERSION", "go1.26.8\ntime 2026-01-01T00:00:00Z\n")
	write("usr/lib/go-1.19/VERSION", "go1.19.8\n")

	id, tc, err := svc.DetectImage(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"g++-12", "gcc-12", "go-1.19.8", "go-1.26.8", "python-3.11"}
	if !slices.Equal(tc, want) {
		t.Errorf("toolchains %q, want %q", tc, want)
	}
	if len(id) != 16 {
		t.Errorf("id %q: want 16 hex characters", id)
	}
	again, _, _ := svc.DetectImage(root)
	if again != id {
		t.Errorf("id changed without a change: %s, %s", id, again)
	}
	write("var/lib/dpkg/status", "Package: gcc-12\nStatus: install ok installed\n\nPackage: make\n")
	if changed, _, _ := svc.DetectImage(root); changed == id {
		t.Errorf("id %s unchanged after a package was installed", id)
	}
}

func TestDetectImageEmptyRoot(t *testing.T) {
	id, tc, err := svc.DetectImage(t.TempDir())
	if err != nil || len(id) != 16 || len(tc) != 0 {
		t.Fatalf("got %q %q %v", id, tc, err)
	}
}
