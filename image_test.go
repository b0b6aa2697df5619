package svc_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/svc-sandbox/svc"
)

// fakeRoot is a root filesystem in a temporary directory.
type fakeRoot struct {
	t   *testing.T
	dir string
}

func newFakeRoot(t *testing.T) *fakeRoot { return &fakeRoot{t, t.TempDir()} }

// write writes an executable file name (relative to the root).
func (r *fakeRoot) write(name, content string) {
	r.t.Helper()
	p := filepath.Join(r.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		r.t.Fatal(err)
	}
}

// link makes name (relative to the root) a symbolic link to target.
func (r *fakeRoot) link(name, target string) {
	r.t.Helper()
	p := filepath.Join(r.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		r.t.Fatal(err)
	}
}

// toolchains returns the toolchains DetectImage finds in the root.
func (r *fakeRoot) toolchains() []string {
	r.t.Helper()
	_, tc, err := svc.DetectImage(r.dir)
	if err != nil {
		r.t.Fatal(err)
	}
	return tc
}

func TestDetectImage(t *testing.T) {
	r := newFakeRoot(t)
	root, write := r.dir, r.write
	write("etc/os-release", "ID=debian\nVERSION_ID=\"12\"\n")
	write("var/lib/dpkg/status", "Package: gcc-12\nStatus: install ok installed\n")
	for _, f := range []string{"gcc-12", "g++-12", "gcc-ar-12", "gcc", "python3.11", "python3", "python3.11-config"} {
		write("usr/bin/"+f, "")
	}
	// Go in /usr/local/go (off the PATH: the sandboxes link it), Debian's
	// Go 1.19 through /usr/bin/go, and a Go root nothing reaches.
	write("usr/local/go/VERSION", "go1.26.8\ntime 2026-01-01T00:00:00Z\n")
	write("usr/local/go/bin/go", "")
	write("usr/lib/go-1.19/VERSION", "go1.19.8\n")
	write("usr/lib/go-1.19/bin/go", "")
	r.link("usr/bin/go", "../lib/go-1.19/bin/go")
	write("usr/lib/go-1.15/VERSION", "go1.15.9\n")
	write("usr/lib/go-1.15/bin/go", "")

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

// debianStatus is a dpkg status file with the packages of the languages,
// and one removed package.
const debianStatus = `Package: pypy3
Status: install ok installed
Priority: optional
Version: 7.3.11+dfsg-2+deb12u3
Description: fast alternative implementation of Python 3.x
 Version: 9.9 (a continuation line, not a field)

Package: rustc
Status: install ok installed
Version: 1.63.0+dfsg1-2

Package: nodejs
Status: install ok installed
Version: 20.20.2-1nodesource1+repack1

Package: golang-1.19-go
Status: deinstall ok config-files
Version: 1.19.8-2
`

// TestDetectLanguages: each language is found by its command on the task
// PATH, with its version read from files, and only then.
func TestDetectLanguages(t *testing.T) {
	jdk := func(r *fakeRoot, home, version string) {
		r.write(home+"/bin/java", "")
		r.write(home+"/bin/javac", "")
		r.write(home+"/release", "IMPLEMENTOR=\"Debian\"\nJAVA_VERSION=\""+version+"\"\nOS_NAME=\"Linux\"\n")
	}
	for _, c := range []struct {
		name  string
		setup func(r *fakeRoot)
		want  []string
	}{
		{"debian", func(r *fakeRoot) {
			r.write("var/lib/dpkg/status", debianStatus)
			r.write("usr/bin/pypy3.9", "")
			r.link("usr/bin/pypy3", "pypy3.9")
			jdk(r, "usr/lib/jvm/java-17-openjdk-amd64", "17.0.21.1")
			jdk(r, "usr/lib/jvm/temurin-25-jdk-amd64", "25.0.3") // not the one on the PATH
			r.link("etc/alternatives/java", "/usr/lib/jvm/java-17-openjdk-amd64/bin/java")
			r.link("etc/alternatives/javac", "/usr/lib/jvm/java-17-openjdk-amd64/bin/javac")
			r.link("usr/bin/java", "/etc/alternatives/java")
			r.link("usr/bin/javac", "/etc/alternatives/javac")
			r.write("usr/bin/rustc", "")
			r.write("usr/bin/node", "")
			r.write("usr/include/node/node_version.h", "#define NODE_MAJOR_VERSION 20\n#define NODE_MINOR_VERSION 20\n")
		}, []string{"java-17", "node-20", "pypy-7.3", "rustc-1.63"}},
		{"packages without commands", func(r *fakeRoot) {
			r.write("var/lib/dpkg/status", debianStatus)
			r.write("usr/include/node/node_version.h", "#define NODE_MAJOR_VERSION 20\n")
			jdk(r, "usr/lib/jvm/java-17-openjdk-amd64", "17.0.21.1")
			r.write("usr/lib/pypy3.9/os.py", "")
		}, nil},
		{"commands without versions", func(r *fakeRoot) {
			r.write("var/lib/dpkg/status", "Package: rustc\nStatus: deinstall ok config-files\nVersion: 1.63.0+dfsg1-2\n")
			for _, c := range []string{"pypy3", "rustc", "node", "java", "javac"} {
				r.write("usr/bin/"+c, "")
			}
		}, nil},
		{"a JRE without javac", func(r *fakeRoot) {
			r.write("usr/lib/jvm/jre/bin/java", "")
			r.write("usr/lib/jvm/jre/release", "JAVA_VERSION=\"17.0.2\"\n")
			r.link("usr/bin/java", "../lib/jvm/jre/bin/java")
		}, nil},
		{"java 8 in /usr/local", func(r *fakeRoot) {
			jdk(r, "opt/jdk8", "1.8.0_392")
			r.link("usr/local/bin/java", "/opt/jdk8/bin/java")
			r.link("usr/local/bin/javac", "/opt/jdk8/bin/javac")
		}, []string{"java-8"}},
		{"links resolved in the root", func(r *fakeRoot) {
			// An absolute link and a ".." above the root stay in it: the
			// host's /usr/lib/jvm is not looked at.
			jdk(r, "usr/lib/jvm/java-21", "21.0.1")
			r.link("usr/bin/java", "/usr/lib/jvm/java-21/bin/java")
			r.link("usr/bin/javac", "../../../../../usr/lib/jvm/java-21/bin/javac")
		}, []string{"java-21"}},
		{"node from its package", func(r *fakeRoot) {
			r.write("var/lib/dpkg/status", debianStatus)
			r.link("bin", "usr/bin") // merged /usr
			r.write("usr/bin/nodejs", "")
			r.link("usr/bin/node", "nodejs")
		}, []string{"node-20"}},
		{"node in /usr/local", func(r *fakeRoot) {
			r.write("usr/local/bin/node", "")
			r.write("usr/local/include/node/node_version.h", "#ifndef SRC_NODE_VERSION_H_\n#define NODE_MAJOR_VERSION 22\n")
		}, []string{"node-22"}},
		{"not commands", func(r *fakeRoot) {
			r.write("var/lib/dpkg/status", debianStatus)
			r.link("usr/bin/pypy3", "pypy3.9")          // dangling
			r.link("usr/bin/node", "node2")             // a loop
			r.link("usr/bin/node2", "node")             //
			r.link("usr/local/bin/rustc", "/usr/share") // a directory
			r.write("usr/bin/rustc", "")
			if err := os.Chmod(filepath.Join(r.dir, "usr/bin/rustc"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newFakeRoot(t)
			r.write("usr/share/doc/README", "")
			c.setup(r)
			if got := r.toolchains(); !slices.Equal(got, c.want) {
				t.Errorf("toolchains %q, want %q", got, c.want)
			}
		})
	}
}

// TestDetectImageHost: on this machine, every language whose command a
// task finds is listed. Under CI=true, which installs them all (.ci/run),
// each must be there.
func TestDetectImageHost(t *testing.T) {
	_, tc, err := svc.DetectImage("/")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("toolchains %q", tc)
	for _, l := range []struct{ prefix, command string }{
		{"gcc-", "gcc"}, {"g++-", "g++"}, {"python-3.", "python3"}, {"pypy-", "pypy3"},
		{"java-", "javac"}, {"rustc-", "rustc"}, {"node-", "node"}, {"go-", "/usr/local/go/bin/go"},
	} {
		found := slices.ContainsFunc(tc, func(s string) bool { return strings.HasPrefix(s, l.prefix) })
		if installed := onTaskPath(l.command); installed != found {
			t.Errorf("command %s installed %v, toolchain %s* listed %v", l.command, installed, l.prefix, found)
		}
		if !found && os.Getenv("CI") == "true" {
			t.Errorf("CI installs %s, but no toolchain %s* is listed", l.command, l.prefix)
		}
	}
}

// onTaskPath reports whether command is an executable on the task PATH
// of this machine (or, with a slash, that file).
func onTaskPath(command string) bool {
	paths := []string{command}
	if !strings.Contains(command, "/") {
		paths = []string{"/usr/local/bin/" + command, "/usr/bin/" + command, "/bin/" + command}
	}
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return true
		}
	}
	return false
}
