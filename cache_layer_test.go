package svc

// Tests of the step cache's parts that need no root: the layer format,
// the diff of snapshots, the keys, and the dir store.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func exitedResults(n int) []Result {
	rs := make([]Result, n)
	for i := range rs {
		v := int64(1000 + i)
		rs[i] = Result{Outcome: OutcomeExited, ExitCode: i, Stdout: fmt.Sprint("out", i), Stats: Stats{WallTimeMs: 5, CPUUsageUsec: &v}}
	}
	return rs
}

// encodeLayer encodes a layer of key with the entries as they are, bad
// ones too (files' content is their target field, for brevity).
func encodeLayer(t testing.TB, key string, results []Result, entries []layerEntry) []byte {
	t.Helper()
	js, err := json.Marshal(results)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	lw := newLayerWriter(&b, key, js, 1<<30)
	for i := range entries {
		e := entries[i]
		content := e.target
		if e.kind == kindFile {
			e.target = ""
			e.size = int64(len(content))
		}
		if err := lw.writeEntry(&e); err != nil {
			t.Fatal(err)
		}
		if e.kind == kindFile {
			if err := lw.content(strings.NewReader(content), e.size); err != nil {
				t.Fatal(err)
			}
		}
	}
	n, err := lw.close()
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(b.Len()) {
		t.Fatalf("close says %d bytes, wrote %d", n, b.Len())
	}
	return b.Bytes()
}

const testKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestLayerRoundTrip(t *testing.T) {
	in := []layerEntry{
		{kind: kindWhiteout, path: "old"},
		{kind: kindDir, path: ".", mode: 0o755, sec: 10, nsec: 5},
		{kind: kindDir, path: "d", mode: 0o750, sec: 11},
		{kind: kindFile, path: "d/f", mode: 0o644, sec: -3, nsec: 999999999, target: "hello\x00\xff"},
		{kind: kindFile, path: "empty", mode: 0o600, sec: 12},
		{kind: kindSymlink, path: "l", mode: 0o777, sec: 13, target: "/etc/passwd"},
	}
	results := exitedResults(2)
	blob := encodeLayer(t, testKey, results, in)
	l, err := verifyLayer(bytes.NewReader(blob), int64(len(blob)), testKey)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(l.results); !bytes.Equal(got, must(json.Marshal(results))) {
		t.Errorf("results %s", got)
	}
	if out := layerEntries(t, l, testKey); !slices.Equal(out, in) {
		t.Errorf("entries\n got %+v\nwant %+v", out, in)
	}
	// A consumer that reads no content still sees every entry.
	n := 0
	if err := l.entries(testKey, func(*layerEntry, io.Reader) error { n++; return nil }); err != nil || n != len(in) {
		t.Errorf("skipping content: %d entries, %v", n, err)
	}
}

// layerEntries returns the entries of l, a file's content in its target
// field as encodeLayer takes it.
func layerEntries(t testing.TB, l *layer, key string) []layerEntry {
	t.Helper()
	var out []layerEntry
	err := l.entries(key, func(e *layerEntry, content io.Reader) error {
		got := *e
		if content != nil {
			b, err := io.ReadAll(content)
			if err != nil {
				return err
			}
			got.target, got.size = string(b), 0
		}
		out = append(out, got)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestLayerRejectsBadPaths(t *testing.T) {
	bad := []layerEntry{
		{kind: kindFile, path: "../x"},
		{kind: kindFile, path: "a/../../x"},
		{kind: kindFile, path: ".."},
		{kind: kindWhiteout, path: ".."},
		{kind: kindFile, path: "/etc/passwd"},
		{kind: kindDir, path: "/"},
		{kind: kindFile, path: "a//b"},
		{kind: kindFile, path: "./a"},
		{kind: kindFile, path: "a/."},
		{kind: kindFile, path: "a/"},
		{kind: kindFile, path: ""},
		{kind: kindFile, path: "a\x00b"},
		{kind: kindFile, path: "."},
		{kind: kindWhiteout, path: "."},
		{kind: kindSymlink, path: ".", target: "x"},
		{kind: kindSymlink, path: "l", target: ""},
		{kind: kindSymlink, path: "l", target: "a\x00b"},
		{kind: kindFile, path: strings.Repeat("a", 256)},
		{kind: kindFile, path: strings.Repeat("a/", 2048) + "a"},
		{kind: kindSymlink, path: "l", target: strings.Repeat("a", maxPathLen)},
		{kind: kindDir, path: "d", mode: 0o10000},
		{kind: kindDir, path: "d", nsec: 1e9},
	}
	for _, e := range bad {
		blob := encodeLayer(t, testKey, exitedResults(1), []layerEntry{e})
		if _, err := verifyLayer(bytes.NewReader(blob), int64(len(blob)), testKey); !errors.Is(err, errCorruptLayer) {
			t.Errorf("%c %.40q -> %.40q: verified (%v)", e.kind, e.path, e.target, err)
		}
		// The writer refuses what the reader would: one rule, checkEntry.
		lw := newLayerWriter(io.Discard, testKey, []byte("[]"), 1<<30)
		if err := lw.entry(&e); !errors.Is(err, errNoLayer) {
			t.Errorf("%c %.40q -> %.40q: written (%v)", e.kind, e.path, e.target, err)
		}
	}
}

// TestLayerPathsShared: a path costs what it does not share with the
// one before it, so a chain of directories costs its names, not the
// square of its depth; the longest path a layer holds round-trips, one
// byte more is refused.
func TestLayerPathsShared(t *testing.T) {
	var entries []layerEntry
	p := ""
	for len(p)+2 <= maxPathLen-2 {
		if p == "" {
			p = "d"
		} else {
			p += "/d"
		}
		entries = append(entries, layerEntry{kind: kindDir, path: p, mode: 0o755})
	}
	long := p + "/" + strings.Repeat("f", maxPathLen-len(p)-1)
	entries = append(entries, layerEntry{kind: kindFile, path: long, mode: 0o644, target: "x"})
	blob := encodeLayer(t, testKey, exitedResults(1), entries)
	if max := 64 * KiB; len(blob) > max {
		t.Errorf("%d directories deep: a blob of %d bytes, want at most %d", len(entries), len(blob), max)
	}
	l, err := verifyLayer(bytes.NewReader(blob), int64(len(blob)), testKey)
	if err != nil {
		t.Fatal(err)
	}
	if got := layerEntries(t, l, testKey); !slices.Equal(got, entries) {
		t.Errorf("the entries did not round-trip")
	}
	lw := newLayerWriter(io.Discard, testKey, []byte("[]"), 1<<30)
	for i := range entries {
		e := entries[i]
		e.target, e.size = "", 1
		if err := lw.entry(&e); err != nil {
			t.Fatalf("%d bytes: %v", len(e.path), err)
		}
	}
	over := layerEntry{kind: kindFile, path: long + "f", mode: 0o644}
	if err := lw.entry(&over); !errors.Is(err, errNoLayer) {
		t.Errorf("a path of %d bytes: %v, want errNoLayer", len(over.path), err)
	}
}

func TestLayerRejectsDamage(t *testing.T) {
	blob := encodeLayer(t, testKey, exitedResults(1), []layerEntry{
		{kind: kindFile, path: "f", mode: 0o644, target: "content"},
	})
	check := func(name string, b []byte, key string) {
		t.Helper()
		if _, err := verifyLayer(bytes.NewReader(b), int64(len(b)), key); !errors.Is(err, errCorruptLayer) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for i := range blob {
		b := slices.Clone(blob)
		b[i] ^= 0x20
		if i == len(layerMagic) {
			// The version byte: a layer of another version, a miss.
			if _, err := verifyLayer(bytes.NewReader(b), int64(len(b)), testKey); !errors.Is(err, errLayerVersion) {
				t.Errorf("the version byte flipped: %v", err)
			}
			continue
		}
		check(fmt.Sprintf("byte %d flipped", i), b, testKey)
	}
	for n := range len(blob) {
		check(fmt.Sprintf("cut to %d bytes", n), blob[:n], testKey)
	}
	check("another key", blob, strings.Repeat("f", 64))
	check("trailing bytes", append(slices.Clone(blob), 0), testKey)
	// Bytes after the end marker, with a matching digest.
	body := blob[:len(blob)-layerDigestLen]
	check("garbage after the entries", resign(append(slices.Clone(body), 'x')), testKey)
	// An unknown kind, with a matching digest.
	check("unknown kind", encodeLayer(t, testKey, exitedResults(1), []layerEntry{{kind: 'x', path: "f"}}), testKey)
	// Results that are not JSON, with a matching digest.
	var b bytes.Buffer
	lw := newLayerWriter(&b, testKey, []byte("{"), 1<<20)
	must(lw.close())
	check("results", b.Bytes(), testKey)
}

// resign appends the digest of a blob's body to it.
func resign(body []byte) []byte {
	sum := sha256.Sum256(body)
	return append(body, sum[:]...)
}

func FuzzVerifyLayer(f *testing.F) {
	f.Add(encodeLayer(f, testKey, exitedResults(1), []layerEntry{
		{kind: kindWhiteout, path: "w"},
		{kind: kindDir, path: "d", mode: 0o755},
		{kind: kindFile, path: "d/f", mode: 0o644, target: "x"},
		{kind: kindSymlink, path: "l", target: "d/f"},
	}))
	f.Add([]byte(layerMagic + "\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := verifyLayer(bytes.NewReader(b), int64(len(b)), testKey)
		if err != nil {
			return
		}
		// Whatever verified has only paths that stay in the workspace.
		err = l.entries(testKey, func(e *layerEntry, _ io.Reader) error {
			if why := checkLayerPath(e.path, e.kind); why != "" {
				t.Fatalf("entry %q accepted: %s", e.path, why)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestLayerWriterLimit(t *testing.T) {
	var b bytes.Buffer
	lw := newLayerWriter(&b, testKey, []byte("[]"), 200)
	e := &layerEntry{kind: kindFile, path: "f", size: 300}
	lw.entry(e)
	if err := lw.content(strings.NewReader(strings.Repeat("x", 300)), 300); !errors.Is(err, errLayerTooLarge) {
		t.Errorf("content over the limit: %v", err)
	}
	if _, err := lw.close(); !errors.Is(err, errLayerTooLarge) {
		t.Errorf("close: %v", err)
	}
}

// snapshotOf builds a tree from "path kind mode size ino mtime ctime [target]"
// lines; times are seconds.
func snapshotOf(lines ...string) *tree {
	t := newTree()
	t.add(".", treeNode{kind: kindDir, mode: 0o755, ino: 1, mtime: time.Unix(1, 0), ctime: time.Unix(1, 0)})
	for _, l := range lines {
		var p, kind, target string
		var mode uint32
		var size int64
		var ino uint64
		var mt, ct int64
		fmt.Sscanf(l, "%s %s %o %d %d %d %d %s", &p, &kind, &mode, &size, &ino, &mt, &ct, &target)
		t.add(p, treeNode{kind: kind[0], mode: mode, size: size, ino: ino, mtime: time.Unix(mt, 0), ctime: time.Unix(ct, 0), target: target})
	}
	return t
}

func TestDiffTrees(t *testing.T) {
	before := snapshotOf(
		"a f 644 1 2 1 1",
		"b f 644 1 3 1 1",
		"d d 755 0 4 1 1",
		"d/x f 644 1 5 1 1",
		"d/y d 755 0 6 1 1",
		"d/y/z f 644 1 7 1 1",
		"e f 644 1 8 1 1",
		"keep f 644 1 9 1 1",
		"l l 777 1 10 1 1 a",
		"m f 644 1 11 1 1",
	)
	after := snapshotOf(
		"a f 600 1 2 1 2", // chmod
		"b f 644 2 3 2 2", // written
		// d and all it held: gone
		"e d 755 0 12 3 3", // file became a directory
		"e/n f 644 1 13 3 3",
		"keep f 644 1 9 1 1",
		"l l 777 1 14 3 3 b", // symlink replaced
		"m f 644 1 15 3 3",   // same size and times, another inode
	)
	got, err := diffTrees(before, after)
	if err != nil {
		t.Fatal(err)
	}
	var desc []string
	for _, e := range got {
		desc = append(desc, fmt.Sprintf("%c %s %o %s", e.kind, e.path, e.mode, e.target))
	}
	want := []string{
		"w d 0 ", "w e 0 ",
		"f a 600 ", "f b 644 ", "d e 755 ", "f e/n 644 ", "l l 777 b", "f m 644 ",
	}
	if !slices.Equal(desc, want) {
		t.Errorf("diff\n got %q\nwant %q", desc, want)
	}

	// A node changed just before the first snapshot counts as changed.
	before = snapshotOf("r f 644 1 2 1 1")
	before.nodes["r"] = treeNode{kind: kindFile, mode: 0o644, size: 1, ino: 2, mtime: before.taken, ctime: before.taken}
	after = &tree{paths: before.paths, nodes: before.nodes}
	if got, _ := diffTrees(before, after); len(got) != 1 || got[0].path != "r" {
		t.Errorf("racy node: %+v", got)
	}

	// Something no layer can hold.
	if _, err := diffTrees(snapshotOf(), snapshotOf("p ? 644 0 2 1 1")); !errors.Is(err, errNoLayer) {
		t.Errorf("fifo: %v", err)
	}
}

// testCache opens a dir cache in a fresh directory with a fixed image.
func testCache(t testing.TB, cfg CacheConfig) *StepCache {
	t.Helper()
	if cfg.URL == "" {
		cfg.URL = "dir://" + t.TempDir()
	}
	if cfg.ImageID == "" {
		cfg.ImageID = "image-1"
	}
	if cfg.Toolchains == nil {
		cfg.Toolchains = []string{"gcc-12"}
	}
	c, err := OpenCache(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestStepKeys(t *testing.T) {
	base := func() *Request {
		return &Request{Steps: []Step{
			Single(Task{Cmd: "gcc", Args: []string{"-o", "p", "p.c"}, Env: map[string]string{"A": "1"}, Stdin: "in",
				Files: map[string]File{"p.c": {Content: "int main(){}"}}}),
			Single(Task{Cmd: "./p"}),
		}}
	}
	c := testCache(t, CacheConfig{})
	cfg, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	keysOf := func(c *StepCache, cfg Config, r *Request) []string {
		return stepKeys(c.keyRoot(&cfg), r, len(r.Steps), cfg.DefaultProfile)
	}
	ref := keysOf(c, cfg, base())
	if len(ref) != 2 || ref[0] == ref[1] || !validKey(ref[0]) {
		t.Fatalf("keys %q", ref)
	}
	if again := keysOf(c, cfg, base()); !slices.Equal(again, ref) {
		t.Fatalf("not deterministic: %q %q", again, ref)
	}
	// What makes no difference.
	same := map[string]func(*Request){
		"task cache flag":  func(r *Request) { r.Steps[0].Tasks[0].Cache = new(bool) },
		"request flags":    func(r *Request) { r.Cache, r.StopOnFailure, r.Legacy = true, true, true },
		"parallel shape":   func(r *Request) { r.Steps[1].Parallel = true },
		"explicit default": func(r *Request) { r.Steps[1].Tasks[0].SandboxProfile = ProfileCompileV2 },
		"explicit /svc":    func(r *Request) { r.Steps[1].Tasks[0].WorkingDir = "/svc" },
		// The file id of the same content is its SHA-256.
		"stored file, same bytes": func(r *Request) {
			r.Steps[0].Tasks[0].Files["p.c"] = File{FileID: sha256Hex("int main(){}")}
		},
	}
	for name, mod := range same {
		r := base()
		mod(r)
		if got := keysOf(c, cfg, r); !slices.Equal(got, ref) {
			t.Errorf("%s changed the keys", name)
		}
	}
	// What does, in the step and (chained) in the next.
	differ := map[string]func(*Request){
		"cmd":         func(r *Request) { r.Steps[0].Tasks[0].Cmd = "cc" },
		"arg":         func(r *Request) { r.Steps[0].Tasks[0].Args[0] = "-O2" },
		"arg split":   func(r *Request) { r.Steps[0].Tasks[0].Args = []string{"-o p", "p.c"} },
		"env":         func(r *Request) { r.Steps[0].Tasks[0].Env["A"] = "2" },
		"env name":    func(r *Request) { r.Steps[0].Tasks[0].Env = map[string]string{"B": "1"} },
		"stdin":       func(r *Request) { r.Steps[0].Tasks[0].Stdin = "" },
		"file":        func(r *Request) { r.Steps[0].Tasks[0].Files["p.c"] = File{Content: "int main(){ }"} },
		"file path":   func(r *Request) { r.Steps[0].Tasks[0].Files = map[string]File{"q.c": {Content: "int main(){}"}} },
		"file_id":     func(r *Request) { r.Steps[0].Tasks[0].Files["p.c"] = File{FileID: strings.Repeat("a", 64)} },
		"working_dir": func(r *Request) { r.Steps[0].Tasks[0].WorkingDir = "/tmp" },
		"profile":     func(r *Request) { r.Steps[0].Tasks[0].SandboxProfile = ProfileCompileV1 },
		"tasks":       func(r *Request) { r.Steps[0].Tasks = append(r.Steps[0].Tasks, Task{Cmd: "true"}) },
	}
	for name, mod := range differ {
		r := base()
		mod(r)
		got := keysOf(c, cfg, r)
		if got[0] == ref[0] || got[1] == ref[1] {
			t.Errorf("%s: keys %q, as before", name, got)
		}
	}
	// The environment of the cache and of the Sandbox.
	other := map[string]func() []string{
		"image":      func() []string { return keysOf(testCache(t, CacheConfig{ImageID: "image-2"}), cfg, base()) },
		"toolchains": func() []string { return keysOf(testCache(t, CacheConfig{Toolchains: []string{"gcc-13"}}), cfg, base()) },
		"namespace":  func() []string { return keysOf(testCache(t, CacheConfig{Namespace: "other"}), cfg, base()) },
		"memory": func() []string {
			cfg := cfg
			cfg.Limits.MemoryMax++
			return keysOf(c, cfg, base())
		},
		"max concurrency": func() []string {
			cfg := cfg
			cfg.Limits.MaxConcurrency++
			return keysOf(c, cfg, base())
		},
		"cpu max": func() []string {
			cfg := cfg
			cfg.Limits.CPUMax.Period++
			return keysOf(c, cfg, base())
		},
		"workspace size": func() []string {
			cfg := cfg
			cfg.WorkspaceSize++
			return keysOf(c, cfg, base())
		},
		"default profile": func() []string {
			cfg := cfg
			cfg.DefaultProfile = ProfileNativeV2
			return keysOf(c, cfg, base())
		},
	}
	for name, keys := range other {
		if got := keys(); got[0] == ref[0] || got[1] == ref[1] {
			t.Errorf("%s: keys as before", name)
		}
	}
	// The second step's key chains through the first.
	r := base()
	r.Steps[0].Tasks[0].Args[0] = "-O2"
	if got := keysOf(c, cfg, r); got[1] == ref[1] {
		t.Errorf("the second key does not chain through the first")
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestLeadingCacheable(t *testing.T) {
	yes, no := true, false
	task := func(c *bool) Task { return Task{Cmd: "x", Cache: c} }
	for _, tc := range []struct {
		req  Request
		want int
	}{
		{Request{Steps: []Step{Single(task(nil))}}, 0},
		{Request{Cache: true, Steps: []Step{Single(task(nil)), Single(task(nil))}}, 2},
		{Request{Legacy: true, Steps: []Step{Single(task(nil)), Single(task(nil))}}, 2},
		{Request{Legacy: true, Steps: []Step{Single(task(nil)), Single(task(&no)), Single(task(nil))}}, 1},
		{Request{Cache: true, Steps: []Step{Single(task(&no)), Single(task(nil))}}, 0},
		{Request{Steps: []Step{Single(task(&yes)), Parallel(task(&yes), task(nil)), Single(task(&yes))}}, 1},
		{Request{Cache: true, Steps: []Step{Parallel(task(nil), task(&yes))}}, 1},
	} {
		if got := tc.req.leadingCacheable(); got != tc.want {
			t.Errorf("%+v: %d, want %d", tc.req, got, tc.want)
		}
	}
}

// putLayer stores a layer of key with a file of n bytes through c.
func putLayer(t testing.TB, c *StepCache, key string, n int) {
	t.Helper()
	err := c.put(context.Background(), key, exitedResults(1), 1<<30, func(lw *layerWriter) error {
		e := &layerEntry{kind: kindFile, path: "f", mode: 0o644, size: int64(n)}
		if err := lw.entry(e); err != nil {
			return err
		}
		return lw.content(bytes.NewReader(make([]byte, n)), int64(n))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func hasLayer(c *StepCache, key string) bool {
	l, blob := c.lookup(context.Background(), key, 1)
	if blob != nil {
		blob.Close()
	}
	return l != nil
}

func keyN(i int) string { return fmt.Sprintf("%064x", i+1) }

func TestDirCacheExpiry(t *testing.T) {
	clock := newFakeClock()
	c := testCache(t, CacheConfig{TTL: time.Hour, Now: clock.Now})
	putLayer(t, c, keyN(0), 10)
	clock.Add(59 * time.Minute)
	if !hasLayer(c, keyN(0)) {
		t.Fatal("gone before its TTL")
	}
	// The use renewed it.
	clock.Add(59 * time.Minute)
	if !hasLayer(c, keyN(0)) {
		t.Fatal("gone before its TTL after its last use")
	}
	clock.Add(time.Hour)
	if hasLayer(c, keyN(0)) {
		t.Fatal("kept past its TTL")
	}
	if _, err := os.Stat(c.store.(*dirCache).path(keyN(0))); !os.IsNotExist(err) {
		t.Errorf("the expired layer is still on disk: %v", err)
	}
	// The sweep removes what nobody looks up.
	putLayer(t, c, keyN(1), 10)
	clock.Add(time.Hour)
	if _, err := c.store.(*dirCache).scan(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.store.(*dirCache).path(keyN(1))); !os.IsNotExist(err) {
		t.Errorf("the sweep left an expired layer: %v", err)
	}
}

func TestDirCacheEvictsLeastRecentlyUsed(t *testing.T) {
	clock := newFakeClock()
	const size = 100 * KiB
	c := testCache(t, CacheConfig{MaxBytes: 3*size + size/2, Now: clock.Now})
	for i := range 3 {
		putLayer(t, c, keyN(i), size)
		clock.Add(time.Minute)
	}
	if !hasLayer(c, keyN(0)) { // used: now the most recent
		t.Fatal("layer 0 missing")
	}
	clock.Add(time.Minute)
	putLayer(t, c, keyN(3), size) // over the bound: 1 goes
	for i, want := range []bool{true, false, true, true} {
		if got := hasLayer(c, keyN(i)); got != want {
			t.Errorf("layer %d kept %v, want %v", i, got, want)
		}
	}
	// Other namespaces in the directory count and are evicted too.
	d := c.store.(*dirCache)
	other := testCache(t, CacheConfig{URL: "dir://" + d.root, Namespace: "other", MaxBytes: 3*size + size/2, Now: clock.Now})
	clock.Add(time.Minute)
	putLayer(t, other, keyN(9), size)
	n := 0
	for i := range 4 {
		if hasLayer(c, keyN(i)) {
			n++
		}
	}
	if n != 2 || !hasLayer(other, keyN(9)) {
		t.Errorf("after a store in another namespace: %d layers left here, want 2", n)
	}
}

func TestDirCacheConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	// Two instances on one directory.
	a := testCache(t, CacheConfig{URL: "dir://" + dir})
	b := testCache(t, CacheConfig{URL: "dir://" + dir})
	var wg sync.WaitGroup
	for i := range 8 {
		c := a
		if i%2 == 1 {
			c = b
		}
		wg.Go(func() {
			for j := range 20 {
				putLayer(t, c, keyN(j%3), 1000+i)
				if l, blob := c.lookup(context.Background(), keyN((j+1)%3), 1); blob != nil {
					if len(l.results) != 1 {
						t.Errorf("results %+v", l.results)
					}
					blob.Close()
				}
			}
		})
	}
	wg.Wait()
	if s := a.Stats(); s.Errors != 0 {
		t.Errorf("a: %+v", s)
	}
	if s := b.Stats(); s.Errors != 0 {
		t.Errorf("b: %+v", s)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "default", dirTmpPrefix+"*"))
	if len(left) != 0 {
		t.Errorf("temporaries left: %q", left)
	}
	n, err := a.Drop(context.Background())
	if err != nil || n != 3 {
		t.Errorf("drop: %d, %v", n, err)
	}
	for i := range 3 {
		if hasLayer(b, keyN(i)) {
			t.Errorf("layer %d survived the drop", i)
		}
	}
}

func TestDirCacheDamagedLayerIsRemoved(t *testing.T) {
	c := testCache(t, CacheConfig{})
	putLayer(t, c, keyN(0), 100)
	p := c.store.(*dirCache).path(keyN(0))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if hasLayer(c, keyN(0)) {
		t.Fatal("a damaged layer was used")
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("the damaged layer is still there: %v", err)
	}
	if s := c.Stats(); s.Errors != 1 {
		t.Errorf("stats %+v", s)
	}
	// A layer filed under another key is damaged too.
	putLayer(t, c, keyN(1), 100)
	if err := os.Rename(c.store.(*dirCache).path(keyN(1)), p); err != nil {
		t.Fatal(err)
	}
	if hasLayer(c, keyN(0)) {
		t.Fatal("a layer of another key was used")
	}
}

func TestOpenCacheErrors(t *testing.T) {
	for _, cfg := range []CacheConfig{
		{},
		{URL: "dir://relative"},
		{URL: "dir:relative"},
		{URL: "ftp://x"},
		{URL: "redis://[::1"},
		{URL: "dir:///tmp/x", Namespace: ".."},
		{URL: "dir:///tmp/x", Namespace: "a/b"},
		{URL: "dir:///tmp/x", Namespace: strings.Repeat("a", 65)},
		{URL: "dir:///tmp/x", TTL: -1},
		{URL: "dir:///tmp/x", MaxBytes: -1},
	} {
		cfg.ImageID, cfg.Toolchains = "i", []string{}
		if c, err := OpenCache(cfg); err == nil {
			c.Close()
			t.Errorf("%+v: no error", cfg)
		}
	}
	c := testCache(t, CacheConfig{})
	if kind, ns, ttl := c.Info(); kind != "dir" || ns != "default" || ttl != 24*time.Hour {
		t.Errorf("info %s %s %v", kind, ns, ttl)
	}
}
