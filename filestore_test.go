package svc_test

// Tasks that use stored files (File.FileID). They need root: see newSandbox.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
)

// newStore returns a file store in a fresh directory, closed at cleanup.
func newStore(t testing.TB) (*svc.FileStore, string) {
	t.Helper()
	dir := t.TempDir()
	fs, err := svc.OpenFileStore(svc.FileStoreConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return fs, dir
}

// storeRandom stores n random bytes, with a NUL and a 0xFF among them,
// and returns their id.
func storeRandom(t testing.TB, fs *svc.FileStore, n int) string {
	t.Helper()
	b := make([]byte, n)
	var key [32]byte
	key[0] = byte(n)
	rand.NewChaCha8(key).Read(b)
	b[0], b[n/2], b[n-1] = 0, 0xff, 0
	info, _, err := fs.Put(context.Background(), bytes.NewReader(b), "in.bin", "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if info.ID != hex.EncodeToString(sum[:]) {
		t.Fatalf("id %s", info.ID)
	}
	return info.ID
}

func stored(id string) svc.File { return svc.File{FileID: id} }

// wantSum checks that a task printed the sha256sum of id for its file.
func wantSum(t testing.TB, r svc.Result, id string) {
	t.Helper()
	expect(t, r, svc.OutcomeExited, 0)
	if !strings.HasPrefix(r.Stdout, id+"  ") {
		t.Errorf("sha256sum inside the sandbox: %q, want %s", r.Stdout, id)
	}
}

// A task that leaves a process behind to watch the workspace's mount
// for huge= (on while a later step's large files are placed,
// placeStep) never sees it: nothing of a step outlives it, and the
// step after, placed with the switch, reads the mount as before.
func TestFileStoreHugeSwitchUnseen(t *testing.T) {
	fs, _ := newStore(t)
	sb := newSandbox(t, svc.Config{Files: fs})
	id := storeRandom(t, fs, 3*svc.MiB)
	watch := `setsid sh -c 'while :; do grep -q huge= /proc/self/mountinfo && echo seen >> seen; stat -c %o big 2>/dev/null | grep -qv 4096 && echo blksize >> seen; done' >/dev/null 2>&1 < /dev/null &
sleep 0.2; echo started`
	resp := run(t, sb,
		svc.Single(sh(watch)),
		svc.Parallel(svc.Task{Cmd: "true", Files: map[string]svc.File{"big": stored(id)}},
			svc.Task{Cmd: "true", Files: map[string]svc.File{"big2": stored(id)}}),
		svc.Single(sh("cat seen 2>/dev/null; pgrep -fc '[w]hile :'; grep -c huge= /proc/self/mountinfo; stat -c %o big")),
	)
	if r := resp.Results[0].Results[0]; r.Stdout != "started\n" {
		t.Fatalf("the watcher did not start: %+v", r)
	}
	if got, want := resp.Results[2].Results[0].Stdout, fmt.Sprintf("0\n0\n%d\n", os.Getpagesize()); got != want {
		t.Errorf("after the placement: %q, want %q (no watcher's report, no watcher, no huge=, a page's st_blksize)", got, want)
	}
}

func TestFileStoreTaskReadsStoredFile(t *testing.T) {
	fs, _ := newStore(t)
	sb := newSandbox(t, svc.Config{Files: fs})
	id := storeRandom(t, fs, 3*svc.MiB+5)
	sum := func(p string) svc.Task {
		return svc.Task{Cmd: "sha256sum", Args: []string{p}, Files: map[string]svc.File{p: stored(id)}}
	}
	// Placed with large folios (placeStep), the file reads as any other:
	// its st_blksize that of the tmpfs's small pages (stdio's buffer
	// size), and the workspace's mount shows no huge= option.
	resp := run(t, sb,
		svc.Single(svc.Task{Cmd: "sh", Args: []string{"-c", "sha256sum data/in.bin; stat -c '%a %s %u %o' data/in.bin; grep -c huge= /proc/self/mountinfo"},
			Files: map[string]svc.File{"data/in.bin": stored(id)}}),
		// The same open file serves every placement, in any order.
		svc.Parallel(sum("p1.bin"), sum("p2/p2.bin")),
		svc.Single(sum("data/in.bin")),
	)
	r := resp.Results[0].Results[0]
	if lines := strings.Split(r.Stdout, "\n"); len(lines) < 3 || lines[1] != fmt.Sprintf("644 3145733 1000 %d", os.Getpagesize()) || lines[2] != "0" {
		t.Errorf("mode, size, owner, block size; mounts with huge=: %q", r.Stdout)
	}
	r.ExitCode, r.Stdout = 0, strings.SplitAfter(r.Stdout, "\n")[0] // grep -c exits 1 on 0
	wantSum(t, r, id)
	for _, sr := range resp.Results[1:] {
		for _, r := range sr.Results {
			wantSum(t, r, id)
		}
	}
	assertClean(t, sb)
}

func TestFileStoreMissingFileID(t *testing.T) {
	fs, _ := newStore(t)
	sb := newSandbox(t, svc.Config{Files: fs})
	id := storeRandom(t, fs, 1000)
	gone := storeRandom(t, fs, 2000)
	if err := fs.Delete(gone); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id, msg string
	}{
		{strings.Repeat("0", 64), `steps[1][1].files["x"]: file_id ` + strings.Repeat("0", 64) + ` is not stored`},
		{gone, `steps[1][1].files["x"]: file_id ` + gone + ` is not stored`},
	} {
		// The first step would take 10 s, and the one before the
		// missing file uses a stored one: nothing of it may run.
		start := time.Now()
		resp, err := sb.Run(context.Background(), &svc.Request{Steps: []svc.Step{
			svc.Single(sh("sleep 10")),
			svc.Parallel(
				svc.Task{Cmd: "true", Files: map[string]svc.File{"a": stored(id)}},
				svc.Task{Cmd: "true", Files: map[string]svc.File{"x": stored(c.id)}}),
		}})
		if resp != nil || !errors.Is(err, svc.ErrFileNotFound) {
			t.Fatalf("got %v, %v; want file_not_found", resp, err)
		}
		if err.Error() != c.msg {
			t.Errorf("message %q\nwant %q", err.Error(), c.msg)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("refused after %v: a step ran", d)
		}
		if sb.SlotsInUse() != 0 {
			t.Errorf("%d slots in use", sb.SlotsInUse())
		}
		assertClean(t, sb)
	}

	// Without a file store, every file_id is missing.
	sb2 := newSandbox(t, svc.Config{})
	_, err := sb2.Run(context.Background(), &svc.Request{Steps: []svc.Step{
		svc.Single(svc.Task{Cmd: "true", Files: map[string]svc.File{"a": stored(id)}}),
	}})
	if !errors.Is(err, svc.ErrFileNotFound) || err.Error() != `steps[0].files["a"]: file_id `+id+` is not stored` {
		t.Fatalf("no store: %v", err)
	}
}

// A stored file whose bytes no longer hash to its id is never placed.
func TestFileStoreCorruptFileNotPlaced(t *testing.T) {
	fs, dir := newStore(t)
	sb := newSandbox(t, svc.Config{Files: fs})
	id := storeRandom(t, fs, 5000)
	p := filepath.Join(dir, id) // the documented layout: Dir/<id>
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[100] ^= 1
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = sb.Run(context.Background(), &svc.Request{Steps: []svc.Step{
		svc.Single(svc.Task{Cmd: "cat", Args: []string{"f"}, Files: map[string]svc.File{"f": stored(id)}}),
	}})
	if !errors.Is(err, svc.ErrFileNotFound) {
		t.Fatalf("got %v, want file_not_found", err)
	}
	if _, err := fs.Stat(id); !errors.Is(err, svc.ErrNotFound) {
		t.Errorf("the damaged file is still stored: %v", err)
	}
}

func TestFileStoreWorkspaceSum(t *testing.T) {
	fs, _ := newStore(t)
	sb := newSandbox(t, svc.Config{Files: fs, WorkspaceSize: svc.MiB})
	a := storeRandom(t, fs, 600*svc.KiB)
	b := storeRandom(t, fs, 600*svc.KiB+1)
	for name, steps := range map[string][]svc.Step{
		"two stored": {
			svc.Single(svc.Task{Cmd: "true", Files: map[string]svc.File{"a": stored(a)}}),
			svc.Single(svc.Task{Cmd: "true", Files: map[string]svc.File{"b": stored(b)}}),
		},
		"stored and inline": {
			svc.Single(svc.Task{Cmd: "true", Files: map[string]svc.File{
				"a": stored(a), "c": {Content: strings.Repeat("c", 600*svc.KiB)}}}),
		},
		"one stored at two paths": {
			svc.Parallel(
				svc.Task{Cmd: "true", Files: map[string]svc.File{"a": stored(a)}},
				svc.Task{Cmd: "true", Files: map[string]svc.File{"a2": stored(a)}}),
		},
	} {
		resp, err := sb.Run(context.Background(), &svc.Request{Steps: steps})
		if resp != nil || !errors.Is(err, svc.ErrLimitsExceeded) {
			t.Errorf("%s: got %v, want limits_exceeded", name, err)
		}
	}
	// The same path placed again is overwritten, not added: this fits.
	use := func(id string) svc.Task {
		return svc.Task{Cmd: "sha256sum", Args: []string{"f"}, Files: map[string]svc.File{"f": stored(id)}}
	}
	resp := run(t, sb, svc.Single(use(a)), svc.Single(use(b)), svc.Single(use(a)))
	wantSum(t, resp.Results[0].Results[0], a)
	wantSum(t, resp.Results[1].Results[0], b)
	wantSum(t, resp.Results[2].Results[0], a)
	assertClean(t, sb)
}

// A stored file deleted while a request that uses it runs is still placed:
// the request opened it before it started.
func TestFileStoreDeletedWhileRunning(t *testing.T) {
	fs, _ := newStore(t)
	sb := newSandbox(t, svc.Config{Files: fs})
	id := storeRandom(t, fs, svc.MiB)
	type res struct {
		resp *svc.Response
		err  error
	}
	done := make(chan res, 1)
	go func() {
		resp, err := sb.Run(context.Background(), &svc.Request{Steps: []svc.Step{
			// Wait for the test to delete the file (the workspace is
			// visible on the host under the state dir).
			svc.Single(sh("touch ready; while [ ! -e deleted ]; do sleep 0.01; done")),
			svc.Single(svc.Task{Cmd: "sha256sum", Args: []string{"in.bin"}, Files: map[string]svc.File{"in.bin": stored(id)}}),
		}})
		done <- res{resp, err}
	}()
	var ws string
	for deadline := time.Now().Add(8 * time.Second); ws == ""; time.Sleep(5 * time.Millisecond) {
		m, _ := filepath.Glob(filepath.Join(sb.Config().StateDir, "run", "*", "svc", "ready"))
		if len(m) == 1 {
			ws = filepath.Dir(m[0])
		}
		if time.Now().After(deadline) {
			t.Fatal("the first step did not start")
		}
	}
	if err := fs.Delete(id); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(id); !errors.Is(err, svc.ErrNotFound) {
		t.Fatalf("after Delete: %v", err)
	}
	if err := os.WriteFile(filepath.Join(ws, "deleted"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	expect(t, r.resp.Results[0].Results[0], svc.OutcomeExited, 0)
	wantSum(t, r.resp.Results[1].Results[0], id)
	assertClean(t, sb)
}
