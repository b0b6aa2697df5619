package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/svctest"
)

// TestPrepare: svc prepare with GO_BUILD_CACHE_DIR off says there is
// nothing to prepare; with a directory, it prepares the Go build cache of
// the image there (the tests' shared one, svctest.GoBuildCache: the real
// go build std the first time on a machine, found ready later), logs
// prepared, and a Sandbox on that directory finds it ready at once.
func TestPrepare(t *testing.T) {
	var logs bytes.Buffer
	err := prepareCmd([]string{"--state-dir", stateDir(t), "--go-build-cache-dir", "off"}, &logs)
	if err == nil || !strings.Contains(err.Error(), "GO_BUILD_CACHE_DIR is off") {
		t.Errorf("with GO_BUILD_CACHE_DIR off: %v, want nothing to prepare", err)
	}

	requireRoot(t)
	if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must have Go in /usr/local/go: %v", err)
		}
		t.Skipf("no Go toolchain in /usr/local/go: %v", err)
	}
	dir := svctest.GoBuildCache()
	logs.Reset()
	if err := prepareCmd([]string{"--state-dir", stateDir(t), "--go-build-cache-dir", dir, "--sandbox-uid-base", testUIDBase()}, &logs); err != nil {
		t.Fatalf("svc prepare: %v\n%s", err, logs.String())
	}
	if !strings.Contains(logs.String(), `"msg":"prepared","go_build_cache_dir":"`+dir+`"`) {
		t.Errorf("svc prepare logged no prepared line:\n%s", logs.String())
	}
	image, _, err := svc.DetectImage("/")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, image)); err != nil || !fi.IsDir() {
		t.Errorf("no prepared cache for image %s in %s: %v", image, dir, err)
	}
	sb := svctest.New(t, svc.Config{GoBuildCache: dir})
	if s := sb.GoBuildCacheState(); s != svc.GoBuildCacheReady {
		t.Errorf("a Sandbox on the prepared directory: %s, want ready at once", s)
	}
}
