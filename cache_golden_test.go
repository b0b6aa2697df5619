package svc

// Golden tests of the step cache's encodings: the keys of steps and the
// bytes of a layer. Layers outlive the code that stored them (a dir://
// or Redis store is shared by instances of different versions, and kept
// across upgrades), so these encodings are a stored format, and these
// tests pin them byte for byte. Code may move and change shape freely
// as long as they pass.
//
// A golden value here changes only with a deliberate change of the cache
// format, made in the same commit and saying so in its message: bump
// layerVersion (layer bytes) or cacheFormat (keys, and what a replay
// reproduces), so that layers stored before it miss instead of being
// replayed wrongly. Never update a golden value to make a refactor pass:
// a refactor that changes one has changed which layer a request replays.
// There is deliberately no -update flag.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// goldenKeyCache is the StepCache of the golden key roots: what OpenCache
// would make of the config, without opening a store.
func goldenKeyCache(ns, imageID string, toolchains ...string) *StepCache {
	return &StepCache{ns: ns, imageID: imageID, toolchains: toolchains}
}

// goldenConfig is a Config with every limit set, so that no default (some
// depend on the machine: MaxConcurrency on the CPUs) enters a golden root.
func goldenConfig() Config {
	return Config{
		Limits: Limits{
			MemoryMax:          256 * MiB,
			PidsMax:            64,
			CPUMax:             CPUMax{Quota: 100000, Period: 100000},
			WallTimeout:        10 * time.Second,
			CPUTimeLimit:       5 * time.Second,
			OverallTimeout:     60 * time.Second,
			OutputLimit:        MiB,
			RequestOutputLimit: 16 * MiB,
			MaxSteps:           32,
			MaxParallelTasks:   8,
			MaxConcurrency:     8,
			ExecuteBodyLimit:   16 * MiB,
			UploadFileLimit:    64 * MiB,
		},
		WorkspaceSize: 256 * MiB,
	}
}

// TestCacheKeyRootGolden pins keyRoot, the hash every step key of a
// Sandbox chains from. Changing a golden root is a cache format change
// (bump cacheFormat), never a way to make a refactor pass; see the top of
// this file. A field added to Limits changes the roots too, on purpose:
// every key covers every limit.
func TestCacheKeyRootGolden(t *testing.T) {
	// The architecture is part of the root; these are amd64's.
	if runtime.GOARCH != "amd64" {
		t.Skipf("the golden roots are amd64's, and the architecture is part of the root (GOARCH=%s)", runtime.GOARCH)
	}
	small := goldenConfig()
	small.Limits.MemoryMax, small.Limits.CPUMax = 64*MiB, CPUMax{Period: 50000}
	small.WorkspaceSize = MiB
	for _, tc := range []struct {
		name string
		c    *StepCache
		cfg  Config
		want string
	}{
		{"default namespace", goldenKeyCache("default", "debian-12-svc-1", "gcc-12.2.0", "python3-3.11.2"), goldenConfig(),
			"5bc74b89431559a130a8594fa02ff2b903af2e09aa7771e8268883e7c60c6fd4"},
		{"no toolchains, small limits", goldenKeyCache("judge.b-2", "image-2"), small,
			"bc11e07af656a507c1f2659d53687550fd7f3b53c264e2b8bf280a047754bac9"},
	} {
		root := tc.c.keyRoot(&tc.cfg)
		if got := hex.EncodeToString(root[:]); got != tc.want {
			t.Errorf("%s: root %s, want %s: the cache format changed (see the top of this file)", tc.name, got, tc.want)
		}
	}
}

// goldenRoot is the root the golden step keys chain from: a fixed value,
// so that they hold on every architecture (TestCacheKeyRootGolden pins
// the real roots).
var goldenRoot = sha256.Sum256([]byte("svc golden key root"))

// goldenPolicy stands in for a profile's policy identity in the golden
// keys. The real identity (policyIdentity) carries a digest of the
// profile's compiled filter, which changes with every edit of an
// allowlist, and must: a layer made under another policy must miss.
// TestStepKeysPolicyIdentity checks that a profile enters a key as its
// identity string and nothing else, so the stand-in covers the rest.
func goldenPolicy(p Profile) Profile { return "golden-policy:" + p }

// goldenKeys returns the keys of the leading cacheable steps of the
// request in js as Sandbox.Run computes them, under a Sandbox whose
// default profile is compile_v2 and which allows every profile, with the
// profiles' stand-ins. It is the one place that calls the key code: a
// refactor that moves or renames it changes this function, never the
// golden keys.
func goldenKeys(t *testing.T, js string) []string {
	t.Helper()
	req, err := DecodeRequest(strings.NewReader(js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	if err := req.Validate(Limits{}, Profiles()); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	for i := range req.Steps {
		for j := range req.Steps[i].Tasks {
			if task := &req.Steps[i].Tasks[j]; task.SandboxProfile != "" {
				task.SandboxProfile = goldenPolicy(task.SandboxProfile)
			}
		}
	}
	return stepKeys(goldenRoot, req, req.leadingCacheable(), goldenPolicy(ProfileCompileV2))
}

// The golden keys below that are equal are equal on purpose: a request
// that differs only in what a key does not cover (a file inline or by id,
// the default working dir or profile spelled out, the shape of a step of
// one task, the cache flags, the legacy form) has the same keys.
const (
	keyEcho       = "c7f25d0bec9ed31373c95a11112111672ecf21dc71678c56bb78fb7fa394fe17"
	keyCompile    = "d41a2188d8429e46bd13bb7b68bf578212a88eb9d2e6c0a3131acdebd13879a7"
	keyCompileRun = "216db7bd1917168cf247944818930e79facc54c1444bff2656ea217c395e8a73"
)

// TestStepKeysGolden pins the step keys of representative requests: what
// stepKeys hashes of each task (cmd, args, env, stdin, working dir, files,
// profile), in which order and encoding, how a key chains through the
// previous one, and which steps have keys at all (the leading cacheable
// ones). Changing a golden key is a cache format change (bump
// cacheFormat), never a way to make a refactor pass; see the top of this
// file.
func TestStepKeysGolden(t *testing.T) {
	const (
		compile = `{"cmd": "gcc", "args": ["-O2", "-o", "main", "main.c"], "files": {"main.c": "int main(void) { return 0; }\n"}}`
		// The same source by its file id: the SHA-256 of its content.
		compileByID = `{"cmd": "gcc", "args": ["-O2", "-o", "main", "main.c"], "files": {"main.c": {"file_id": "` +
			`2ad75d95660563887d8d3f1d0ae1dcf18c2379cbd83a5c72f5ab276351ee6949"}}}`
		run = `{"cmd": "./main", "stdin": "1 2\n", "sandbox_profile": "native_v2"}`
	)
	for _, tc := range []struct {
		name string
		req  string
		want []string
	}{
		{"single", `{"cache": true, "steps": [{"cmd": "echo", "args": ["hi"]}]}`,
			[]string{keyEcho}},
		{"single as a parallel step of one", `{"cache": true, "steps": [[{"cmd": "echo", "args": ["hi"]}]]}`,
			[]string{keyEcho}},
		{"task cache flag", `{"steps": [{"cmd": "echo", "args": ["hi"], "cache": true}]}`,
			[]string{keyEcho}},
		{"not cacheable", `{"steps": [{"cmd": "echo", "args": ["hi"]}]}`,
			[]string{}},
		{"cacheable until a task says no", `{"cache": true, "steps": [{"cmd": "echo", "args": ["hi"]}, [{"cmd": "true"}, {"cmd": "date", "cache": false}], {"cmd": "true"}]}`,
			[]string{keyEcho}},

		{"compile and run", `{"cache": true, "steps": [` + compile + `, ` + run + `]}`,
			[]string{keyCompile, keyCompileRun}},
		{"file by id", `{"cache": true, "steps": [` + compileByID + `, ` + run + `]}`,
			[]string{keyCompile, keyCompileRun}},
		{"legacy", `[` + compile + `, ` + run + `]`,
			[]string{keyCompile, keyCompileRun}},
		{"legacy, the run not cacheable", `[` + compile + `, {"cmd": "./main", "stdin": "1 2\n", "sandbox_profile": "native_v2", "cache": false}]`,
			[]string{keyCompile}},
		{"compile, then two runs in parallel", `{"cache": true, "steps": [` + compile + `, [` + run + `, {"cmd": "./main", "stdin": "3 4\n", "sandbox_profile": "native_v2"}]]}`,
			[]string{keyCompile, "876b5259abd6579cf14e447fb98f1828f1b79a86028a0a7f75d22c5de909ba3b"}},
		{"the same runs in the other order", `{"cache": true, "steps": [` + compile + `, [{"cmd": "./main", "stdin": "3 4\n", "sandbox_profile": "native_v2"}, ` + run + `]]}`,
			[]string{keyCompile, "588638360c7b2b6b462b6072709ea7471d284e6e34af76318b0b65b57a356fe6"}},

		{"env", `{"cache": true, "steps": [{"cmd": "sh", "args": ["-c", "echo $A$B"], "env": {"B": "2", "A": "1"}}]}`,
			[]string{"daa3ee58da53a210ec0debd176f41e55fb83f91790f2d0434b776fe9aa993fbb"}},
		{"env, one empty", `{"cache": true, "steps": [{"cmd": "sh", "args": ["-c", "echo $A$B"], "env": {"A": "1", "B": ""}}]}`,
			[]string{"5f94a286a13ef3c2a2d079dc96a54c45e1fb0b73b6a13b6c75932dc117c2dec4"}},
		{"args, empty and with spaces", `{"cache": true, "steps": [{"cmd": "printf", "args": ["%s|", "", "a b", "é"]}]}`,
			[]string{"14172798c03f9b6ebc17496208272556264c3c977400ee29cbbeb732ee138694"}},
		{"files, paths in clean form", `{"cache": true, "steps": [{"cmd": "cat", "args": ["src/a.txt", "b.txt"], "files": {"./src//a.txt": "a\n", "b.txt": ""}}]}`,
			[]string{"a6c5f4e206aba804c6bf91c3fda63897a0eee752bc9db84266c8422a375909d0"}},

		{"working_dir default", `{"cache": true, "steps": [{"cmd": "pwd"}]}`,
			[]string{"3ff544f1c4ec55dbacb319adbaa74766df003da1492e681067b488e622544914"}},
		{"working_dir /svc", `{"cache": true, "steps": [{"cmd": "pwd", "working_dir": "/svc/"}]}`,
			[]string{"3ff544f1c4ec55dbacb319adbaa74766df003da1492e681067b488e622544914"}},
		{"working_dir /tmp", `{"cache": true, "steps": [{"cmd": "pwd", "working_dir": "/tmp"}]}`,
			[]string{"557f43feda4f45ca1961ecd217f181eaefbc117cd0660975b37c229e7b8aed22"}},

		{"profile default", `{"cache": true, "steps": [{"cmd": "true"}]}`,
			[]string{"baeb183516a860b5a268a53ce01af1a3336b1e4c05f7648aadac722b1be8f590"}},
		{"profile compile_v2", `{"cache": true, "steps": [{"cmd": "true", "sandbox_profile": "compile_v2"}]}`,
			[]string{"baeb183516a860b5a268a53ce01af1a3336b1e4c05f7648aadac722b1be8f590"}},
		{"profile native_v2", `{"cache": true, "steps": [{"cmd": "true", "sandbox_profile": "native_v2"}]}`,
			[]string{"d6197272d9a25ec0798b0d1a7c6e6938911de62d5bc9817191e7a2707a83621b"}},
		{"profile compile_v1", `{"cache": true, "steps": [{"cmd": "true", "sandbox_profile": "compile_v1"}]}`,
			[]string{"5d3c1746e23ed2a11ba3fc683d7b54950e215f5a69ba9ed81cdc06fe3be6b433"}},
		{"profile native_v1", `{"cache": true, "steps": [{"cmd": "true", "sandbox_profile": "native_v1"}]}`,
			[]string{"6ef0fbab74fabe8bd494d53f6d18e8455d030884b2487b5a48c2fecaa0d72fe2"}},
	} {
		got := goldenKeys(t, tc.req)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: keys\n\t%q\nwant\n\t%q\nthe cache format changed (see the top of this file)", tc.name, got, tc.want)
		}
	}
}

// TestStepKeysPolicyIdentity: a profile enters a step key as its policy
// identity, its name and a digest of its compiled filter, and as nothing
// else; a task naming no profile takes the default's. With
// TestStepKeysGolden, which uses stand-ins for the identities, this pins
// the keys up to the filters themselves.
func TestStepKeysPolicyIdentity(t *testing.T) {
	keys := func(p, def Profile) []string {
		req := &Request{Steps: []Step{Single(Task{Cmd: "true", SandboxProfile: p})}}
		return stepKeys(goldenRoot, req, 1, def)
	}
	form := regexp.MustCompile(`^[a-z0-9_]+:[0-9a-f]{32}$`)
	seen := map[string]Profile{}
	for _, p := range Profiles() {
		id := policyIdentity(p)
		if runtime.GOOS == "linux" && (!form.MatchString(id) || !strings.HasPrefix(id, string(p)+":")) {
			t.Errorf("%s: identity %q, want %s:<32 hex digits>", p, id, p)
		}
		if q, ok := seen[id]; ok {
			t.Errorf("%s and %s have the same identity %q", p, q, id)
		}
		seen[id] = p
		want := keys(Profile(id), ProfileCompileV2)
		if got := keys(p, ProfileCompileV2); !slices.Equal(got, want) {
			t.Errorf("%s: key %q, want %q, the key of its identity %q", p, got, want, id)
		}
		if got := keys("", p); !slices.Equal(got, want) {
			t.Errorf("default %s: key %q, want %q, the key of its identity %q", p, got, want, id)
		}
	}
}

// goldenLayerKey is the key the golden layer is stored under.
const goldenLayerKey = "5f0c3a1e9b7d2468ace13579bdf02468ace13579bdf02468ace13579bdf0abcd"

// goldenLayerSHA256 is the SHA-256 of testdata/cache/layer-v2.bin, the
// blob layerWriter made of goldenLayerResults and goldenLayerEntries at
// layerVersion 2: each path the bytes it shares with the one before, then
// the rest.
const goldenLayerSHA256 = "339bf81c3a13eabf71a5ac3ea87a572adef1a6fbc8cca61b501eed4ee7222a4a"

var goldenLayerFile = filepath.Join("testdata", "cache", "layer-v2.bin")

// goldenLayerV1SHA256 is the SHA-256 of testdata/cache/layer-v1.bin, the
// same layer as layerVersion 1 wrote it (every path whole), kept to show
// that a layer stored before version 2 is a clean miss.
const goldenLayerV1SHA256 = "461748efb128cd4b47c2c4164ebfb8a0111f557e899272cfc4903ed4bc27af10"

var goldenLayerV1File = filepath.Join("testdata", "cache", "layer-v1.bin")

// goldenLayerResults are the results of a parallel step of two tasks, one
// with every statistic, one with some the kernel did not provide.
func goldenLayerResults() []Result {
	n := func(v int64) *int64 { return &v }
	return []Result{
		{
			Outcome: OutcomeExited, ExitCode: 0, Stdout: "3\n", Stderr: "",
			Stats: Stats{
				WallTimeMs: 12, CPUUsageUsec: n(4210), CPUUserUsec: n(3000), CPUSystemUsec: n(1210),
				CPUNrThrottled: n(0), CPUThrottledUsec: n(0), MemoryPeakBytes: n(1 << 20), PidsPeak: n(1),
				OOMKillCount: n(0), PidsLimitHitCount: n(0), DeniedSyscalls: map[string]int64{"getuid": 2, "link": 1},
			},
		},
		{
			Outcome: OutcomeExited, ExitCode: 1, Stdout: "", Stderr: "main.c:1: error: \u00e9\ufffd\n",
			Stats: Stats{WallTimeMs: 1500, CPUUsageUsec: n(1_499_999), MemoryPeakBytes: n(300 << 20), DeniedSyscalls: map[string]int64{}},
		},
	}
}

// goldenLayerEntries are the entries of the golden layer in the order a
// capture writes them (whiteouts, then each directory before what it
// holds), a file's content in its target field as encodeLayer takes it.
var goldenLayerEntries = []layerEntry{
	{kind: kindWhiteout, path: "main.o"},
	{kind: kindWhiteout, path: "build"},
	{kind: kindDir, path: ".", mode: 0o755, sec: 1_700_000_000, nsec: 123_456_789},
	{kind: kindDir, path: "shared", mode: 0o1777, sec: 1_700_000_001},
	{kind: kindDir, path: "src", mode: 0o750, sec: 1_700_000_002, nsec: 1},
	{kind: kindFile, path: "src/main.c", mode: 0o644, sec: 1_700_000_003, nsec: 999_999_999, target: "int main(void) { return 0; }\n"},
	{kind: kindFile, path: "main", mode: 0o4755, sec: 1_700_000_004, target: "\x7fELF\x02\x01\x01\x00\xff\xfe"},
	{kind: kindFile, path: "empty", mode: 0o600, sec: 1_700_000_005},
	{kind: kindFile, path: "old", mode: 0o444, sec: -86400, nsec: 500},
	{kind: kindSymlink, path: "link", mode: 0o777, sec: 1_700_000_006, target: "src/main.c"},
	{kind: kindSymlink, path: "src/out", mode: 0o777, sec: 1_700_000_007, target: "/etc/passwd"},
}

// TestLayerEncodeGolden pins the bytes layerWriter writes, results
// encoded as StepCache.put encodes them. Changing the golden blob is a
// cache format change (bump layerVersion, or cacheFormat for a change of
// the results), never a way to make a refactor pass; see the top of this
// file.
func TestLayerEncodeGolden(t *testing.T) {
	blob := encodeLayer(t, goldenLayerKey, goldenLayerResults(), goldenLayerEntries)
	sum := sha256.Sum256(blob)
	if got := hex.EncodeToString(sum[:]); got != goldenLayerSHA256 {
		want, _ := os.ReadFile(goldenLayerFile)
		i := 0
		for i < len(blob) && i < len(want) && blob[i] == want[i] {
			i++
		}
		t.Errorf("layer SHA-256 %s, want %s: the cache format changed (see the top of this file); "+
			"%d bytes, %s has %d, the first difference at offset %d", got, goldenLayerSHA256, len(blob), goldenLayerFile, len(want), i)
	}
}

// TestLayerDecodeGolden: a layer stored at layerVersion 2 (the golden
// blob in testdata) verifies and decodes to the results and entries it
// was made of. This is the promise that a layer stored before a change
// replays after it; never regenerate the file to make this pass.
func TestLayerDecodeGolden(t *testing.T) {
	blob, err := os.ReadFile(goldenLayerFile)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(blob); hex.EncodeToString(sum[:]) != goldenLayerSHA256 {
		t.Fatalf("%s is not the golden layer: SHA-256 %x, want %s", goldenLayerFile, sum, goldenLayerSHA256)
	}
	l, err := verifyLayer(bytes.NewReader(blob), int64(len(blob)), goldenLayerKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkResults(l.results, 2); err != nil {
		t.Fatal(err)
	}
	if want := goldenLayerResults(); !reflect.DeepEqual(l.results, want) {
		t.Errorf("results\n got %+v\nwant %+v", l.results, want)
	}
	if got := layerEntries(t, l, goldenLayerKey); !slices.Equal(got, goldenLayerEntries) {
		t.Errorf("entries\n got %+v\nwant %+v", got, goldenLayerEntries)
	}
}

// TestLayerOldVersionIsAMiss: a layer stored at layerVersion 1 is of
// another format version (errLayerVersion), not a damaged layer: the
// lookup removes it quietly and the step runs and stores it again.
func TestLayerOldVersionIsAMiss(t *testing.T) {
	blob, err := os.ReadFile(goldenLayerV1File)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(blob); hex.EncodeToString(sum[:]) != goldenLayerV1SHA256 {
		t.Fatalf("%s is not the version 1 golden layer: SHA-256 %x, want %s", goldenLayerV1File, sum, goldenLayerV1SHA256)
	}
	_, err = verifyLayer(bytes.NewReader(blob), int64(len(blob)), goldenLayerKey)
	if !errors.Is(err, errLayerVersion) || errors.Is(err, errCorruptLayer) {
		t.Fatalf("a version 1 layer: %v, want errLayerVersion and not errCorruptLayer", err)
	}

	c, err := OpenCache(CacheConfig{URL: "dir://" + t.TempDir(), ImageID: "test", Toolchains: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	sink, err := c.store.create(ctx, goldenLayerKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write(blob); err != nil {
		t.Fatal(err)
	}
	if err := sink.commit(ctx, int64(len(blob))); err != nil {
		t.Fatal(err)
	}
	if l, _ := c.lookup(ctx, goldenLayerKey, 2); l != nil {
		t.Fatal("a version 1 layer was looked up")
	}
	if s := c.Stats(); s.Errors != 0 {
		t.Errorf("stats %+v: a layer of another version counted as an error", s)
	}
	if _, err := c.store.get(ctx, goldenLayerKey); !errors.Is(err, errCacheMiss) {
		t.Errorf("the version 1 layer is still stored: %v", err)
	}
}
