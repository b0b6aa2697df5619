package svc

// Tests of the file store on its own: no sandbox, no root.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is an injectable clock; tests move it with Add.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// openTestStore opens a store in a fresh directory unless cfg names one;
// it is closed at cleanup.
func openTestStore(t testing.TB, cfg FileStoreConfig) *FileStore {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	s, err := OpenFileStore(cfg)
	if err != nil {
		t.Fatalf("OpenFileStore: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// binaryContent returns n pseudo-random bytes of seed that start with a
// NUL and a 0xFF and hold every byte value when n >= 256+2.
func binaryContent(n int, seed uint64) []byte {
	b := make([]byte, n)
	var key [32]byte
	key[0] = byte(seed)
	key[1] = byte(seed >> 8)
	rand.NewChaCha8(key).Read(b)
	for i := range min(n, 256+2) {
		switch i {
		case 0:
			b[i] = 0
		case 1:
			b[i] = 0xff
		default:
			b[i] = byte(i - 2)
		}
	}
	return b
}

func hexSum(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func put(t testing.TB, s *FileStore, content []byte, name, ctype string) (StoredFile, bool) {
	t.Helper()
	info, exists, err := s.Put(context.Background(), bytes.NewReader(content), name, ctype)
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	return info, exists
}

func readStored(t testing.TB, s *FileStore, id string) []byte {
	t.Helper()
	f, _, err := s.Open(id)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wantCode(t testing.TB, err error, c Code) {
	t.Helper()
	if CodeOf(err) != c {
		t.Fatalf("got error %v (code %q), want code %q", err, CodeOf(err), c)
	}
}

// dirNames lists the names in dir, sorted, without the lock file.
func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if e.Name() != storeLockName {
			out = append(out, e.Name())
		}
	}
	return out
}

// wantStoredOnDisk checks that dir holds exactly the content and metadata
// of ids (no temporaries).
func wantStoredOnDisk(t testing.TB, dir string, ids ...string) {
	t.Helper()
	var want []string
	for _, id := range ids {
		want = append(want, id, id+storeMetaExt)
	}
	slices.Sort(want)
	if got := dirNames(t, dir); !slices.Equal(got, want) {
		t.Fatalf("on disk: %q, want %q", got, want)
	}
}

func TestFileStoreRoundTrip(t *testing.T) {
	s := openTestStore(t, FileStoreConfig{})
	for i, n := range []int{0, 1, 2, 300, 256*KiB + 17, 3*MiB + 5} {
		content := binaryContent(n, uint64(i))
		before := time.Now()
		info, exists, err := s.Put(context.Background(), bytes.NewReader(content), "in.bin", "application/x-test")
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if exists || info.ID != hexSum(content) || info.Size != int64(n) {
			t.Fatalf("%d bytes: got %+v exists %v, want id %s", n, info, exists, hexSum(content))
		}
		if info.CreatedAt.Location() != time.UTC || info.CreatedAt.Before(before.Add(-time.Second)) {
			t.Errorf("created_at %v", info.CreatedAt)
		}
		if got := readStored(t, s, info.ID); !bytes.Equal(got, content) {
			t.Fatalf("%d bytes: read back %d different bytes", n, len(got))
		}
		st, err := s.Stat(info.ID)
		if err != nil || *st.Filename != "in.bin" || *st.ContentType != "application/x-test" || st.Size != int64(n) {
			t.Fatalf("Stat: %+v %v", st, err)
		}
	}
	if n, _ := s.Usage(); n != 6 {
		t.Errorf("Usage: %d files, want 6", n)
	}
}

func TestFileStoreJSON(t *testing.T) {
	s := openTestStore(t, FileStoreConfig{Now: newFakeClock().Now})
	info, _ := put(t, s, []byte("x"), "", "")
	b, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"` + hexSum([]byte("x")) + `","filename":null,"content_type":null,"size":1,"created_at":"2030-01-02T03:04:05Z"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	// A time in another zone is still encoded in UTC.
	info.CreatedAt = info.CreatedAt.In(time.FixedZone("X", 3600))
	name := "a\xffb" // invalid UTF-8 is stored as U+FFFD
	info2, _ := put(t, s, []byte("y"), name, "text/plain")
	b, _ = json.Marshal([]StoredFile{info, info2})
	if !strings.Contains(string(b), `"created_at":"2030-01-02T03:04:05Z"`) || !strings.Contains(string(b), "\"filename\":\"a\uFFFDb\",\"content_type\":\"text/plain\"") {
		t.Errorf("got %s", b)
	}
	var back StoredFile
	if err := json.Unmarshal(b[1:bytes.IndexByte(b, '}')+1], &back); err != nil || !back.CreatedAt.Equal(info.CreatedAt) {
		t.Errorf("round trip: %+v %v", back, err)
	}
}

func TestFileStoreDedupe(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	s := openTestStore(t, FileStoreConfig{Dir: dir, Now: clock.Now})
	content := binaryContent(100*KiB, 7)
	first, exists := put(t, s, content, "first.bin", "application/one")
	if exists {
		t.Fatal("first upload: already_exists")
	}
	clock.Add(time.Hour)
	again, exists := put(t, s, content, "second.bin", "application/two")
	if !exists {
		t.Fatal("second upload: not already_exists")
	}
	if again.ID != first.ID || *again.Filename != "first.bin" || !again.CreatedAt.Equal(first.CreatedAt) {
		t.Errorf("second upload: %+v, want the first's entry %+v", again, first)
	}
	if n, b := s.Usage(); n != 1 || b != int64(len(content)) {
		t.Errorf("Usage: %d files %d bytes", n, b)
	}
	wantStoredOnDisk(t, dir, first.ID)
}

func TestFileStoreList(t *testing.T) {
	clock := newFakeClock()
	s := openTestStore(t, FileStoreConfig{Now: clock.Now})
	if got := s.List(); len(got) != 0 {
		t.Fatalf("empty store lists %v", got)
	}
	var ids []string
	for i := range 4 {
		info, _ := put(t, s, []byte{byte(i)}, fmt.Sprintf("f%d", i), "")
		ids = append(ids, info.ID)
		clock.Add(time.Second)
	}
	got := s.List()
	if len(got) != 4 {
		t.Fatalf("List: %d entries", len(got))
	}
	for i, f := range got {
		j := 3 - i // newest first
		if f.ID != ids[j] || *f.Filename != fmt.Sprintf("f%d", j) || f.Size != 1 || f.ContentType != nil {
			t.Errorf("List[%d] = %+v, want file %d", i, f, j)
		}
	}
}

func TestFileStoreDelete(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, FileStoreConfig{Dir: dir})
	keep, _ := put(t, s, []byte("keep"), "", "")
	info, _ := put(t, s, []byte("delete me"), "", "")
	f, _, err := s.Open(info.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := s.Delete(info.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	_, err = s.Stat(info.ID)
	wantCode(t, err, CodeNotFound)
	_, _, err = s.Open(info.ID)
	wantCode(t, err, CodeNotFound)
	wantCode(t, s.Delete(info.ID), CodeNotFound)
	if got := s.List(); len(got) != 1 || got[0].ID != keep.ID {
		t.Errorf("List after Delete: %+v", got)
	}
	if n, b := s.Usage(); n != 1 || b != 4 {
		t.Errorf("Usage: %d files %d bytes", n, b)
	}
	wantStoredOnDisk(t, dir, keep.ID)
	// What was open before the delete stays readable.
	if b, err := io.ReadAll(f); err != nil || string(b) != "delete me" {
		t.Errorf("open file after Delete: %q %v", b, err)
	}
	// And the same bytes can be stored again.
	if _, exists := put(t, s, []byte("delete me"), "", ""); exists {
		t.Error("upload after Delete: already_exists")
	}
}

func TestFileStoreIDValidation(t *testing.T) {
	good := hexSum([]byte("x"))
	for _, c := range []struct {
		id string
		ok bool
	}{
		{good, true},
		{strings.Repeat("0", 64), true},
		{"", false},
		{good[:63], false},
		{good + "0", false},
		{strings.ToUpper(good), false},
		{"g" + good[1:], false},
		{" " + good[1:], false},
		{good[:63] + "\x00", false},
		{"../" + good[3:], false},
	} {
		if got := ValidFileID(c.id); got != c.ok {
			t.Errorf("ValidFileID(%q) = %v", c.id, got)
		}
	}
	s := openTestStore(t, FileStoreConfig{})
	for _, id := range []string{"", strings.ToUpper(good), "../x", good + "0"} {
		_, err := s.Stat(id)
		wantCode(t, err, CodeInvalidRequest)
		_, _, err = s.Open(id)
		wantCode(t, err, CodeInvalidRequest)
		wantCode(t, s.Delete(id), CodeInvalidRequest)
	}
	_, err := s.Stat(good)
	wantCode(t, err, CodeNotFound)
	if !errors.Is(err, ErrNotFound) || strings.Contains(err.Error(), os.TempDir()) {
		t.Errorf("not found error: %v", err)
	}
}

func TestFileStoreTTL(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	s := openTestStore(t, FileStoreConfig{Dir: dir, TTL: time.Hour, Now: clock.Now})
	a, _ := put(t, s, []byte("a"), "", "")
	b, _ := put(t, s, []byte("b"), "", "")
	c, _ := put(t, s, []byte("c"), "", "")

	clock.Add(50 * time.Minute)
	readStored(t, s, a.ID) // a use
	put(t, s, []byte("b"), "", "")
	if _, err := s.Stat(c.ID); err != nil { // Stat is no use
		t.Fatal(err)
	}

	clock.Add(10 * time.Minute) // c was last used an hour ago
	_, err := s.Stat(c.ID)
	wantCode(t, err, CodeNotFound)
	_, _, err = s.Open(c.ID)
	wantCode(t, err, CodeNotFound)
	if got := s.List(); len(got) != 2 {
		t.Errorf("List: %+v", got)
	}

	clock.Add(49 * time.Minute) // a and b were last used 59 minutes ago
	s.sweepExpired()            // what the background sweep does
	wantStoredOnDisk(t, dir, a.ID, b.ID)
	clock.Add(time.Minute)
	s.sweepExpired()
	wantStoredOnDisk(t, dir)
	if n, bytes := s.Usage(); n != 0 || bytes != 0 {
		t.Errorf("Usage: %d files %d bytes", n, bytes)
	}
	if _, exists := put(t, s, []byte("a"), "", ""); exists {
		t.Error("upload after expiry: already_exists")
	}
}

func TestFileStoreQuota(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	s := openTestStore(t, FileStoreConfig{Dir: dir, MaxBytes: MiB, TTL: time.Hour, Now: clock.Now})
	a := binaryContent(600*KiB, 1)
	b := binaryContent(600*KiB, 2)
	ia, _ := put(t, s, a, "", "")
	_, _, err := s.Put(context.Background(), bytes.NewReader(b), "", "")
	wantCode(t, err, CodeCapacityExhausted)
	wantStoredOnDisk(t, dir, ia.ID)
	// Content that is stored already needs no room.
	if _, exists := put(t, s, a, "", ""); !exists {
		t.Error("dedupe in a full store: not already_exists")
	}
	// Deleting makes room.
	if err := s.Delete(ia.ID); err != nil {
		t.Fatal(err)
	}
	ib, _ := put(t, s, b, "", "")
	// Expired files make room too, even before the sweep.
	clock.Add(time.Hour)
	ia, _ = put(t, s, a, "", "")
	wantStoredOnDisk(t, dir, ia.ID)
	_, err = s.Stat(ib.ID)
	wantCode(t, err, CodeNotFound)
	if _, b := s.Usage(); b != int64(len(a)) {
		t.Errorf("Usage: %d bytes", b)
	}
}

// countingReader yields an endless stream of bytes and counts them.
type countingReader struct{ n int64 }

func (r *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r.n + int64(i))
	}
	r.n += int64(len(p))
	return len(p), nil
}

func TestFileStoreUploadLimit(t *testing.T) {
	dir := t.TempDir()
	const limit = 300*KiB + 3 // not a multiple of the read buffer
	s := openTestStore(t, FileStoreConfig{Dir: dir, MaxUploadBytes: limit})
	if _, _, err := s.Put(context.Background(), io.LimitReader(&countingReader{}, limit), "", ""); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	r := &countingReader{}
	_, _, err := s.Put(context.Background(), r, "", "")
	wantCode(t, err, CodePayloadTooLarge)
	if r.n != limit+1 {
		t.Errorf("read %d bytes of an endless upload, want limit+1 = %d", r.n, limit+1)
	}
	if got := dirNames(t, dir); len(got) != 2 {
		t.Errorf("on disk: %q", got)
	}
}

func TestFileStoreConcurrentUploadLimit(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, FileStoreConfig{Dir: dir, MaxConcurrentUploads: 2})
	type res struct {
		info StoredFile
		err  error
	}
	var pws []*io.PipeWriter
	results := make(chan res, 2)
	for i := range 2 {
		pr, pw := io.Pipe()
		pws = append(pws, pw)
		go func() {
			info, _, err := s.Put(context.Background(), pr, "", "")
			results <- res{info, err}
		}()
		// The write returns once Put reads: it holds its upload slot.
		if _, err := pw.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := s.Put(context.Background(), strings.NewReader("third"), "", "")
	wantCode(t, err, CodeCapacityExhausted)
	pws[0].Close()
	if r := <-results; r.err != nil {
		t.Fatal(r.err)
	}
	// A slot is free again.
	if _, exists := put(t, s, []byte("third"), "", ""); exists {
		t.Error("third: already_exists")
	}
	pws[1].CloseWithError(errors.New("client went away"))
	if r := <-results; CodeOf(r.err) != CodeInvalidRequest {
		t.Errorf("broken upload: %v", r.err)
	}
	if n, _ := s.Usage(); n != 2 {
		t.Errorf("Usage: %d files", n)
	}
	if got := dirNames(t, dir); len(got) != 4 {
		t.Errorf("on disk: %q", got)
	}
}

func TestFileStoreConcurrentSameBytes(t *testing.T) {
	dir := t.TempDir()
	const n = 16
	s := openTestStore(t, FileStoreConfig{Dir: dir, MaxConcurrentUploads: n})
	content := binaryContent(MiB+1, 3)
	var wg sync.WaitGroup
	start := make(chan struct{})
	type res struct {
		info   StoredFile
		exists bool
		err    error
	}
	results := make([]res, n)
	for i := range n {
		wg.Go(func() {
			<-start
			info, exists, err := s.Put(context.Background(), bytes.NewReader(content), fmt.Sprint(i), "")
			results[i] = res{info, exists, err}
		})
	}
	close(start)
	wg.Wait()
	created := 0
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("upload %d: %v", i, r.err)
		}
		if r.info.ID != hexSum(content) {
			t.Fatalf("upload %d: id %s", i, r.info.ID)
		}
		if !r.exists {
			created++
		}
	}
	if created != 1 {
		t.Errorf("%d uploads stored the file, want 1", created)
	}
	if files, b := s.Usage(); files != 1 || b != int64(len(content)) {
		t.Errorf("Usage: %d files %d bytes", files, b)
	}
	wantStoredOnDisk(t, dir, hexSum(content))
	if got := readStored(t, s, hexSum(content)); !bytes.Equal(got, content) {
		t.Error("content differs")
	}
	if s.reserved != 0 {
		t.Errorf("%d bytes still reserved", s.reserved)
	}
}

// TestFileStoreCrashChild is the process TestFileStoreCrash kills.
func TestFileStoreCrashChild(t *testing.T) {
	dir, stage := os.Getenv("SVC_TEST_CRASH_DIR"), os.Getenv("SVC_TEST_CRASH_STAGE")
	if dir == "" {
		t.Skip("helper process of TestFileStoreCrash")
	}
	s, err := OpenFileStore(FileStoreConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	testHookPut = func(s string) {
		if s == stage {
			os.Exit(3)
		}
	}
	var r io.Reader = bytes.NewReader(binaryContent(4*MiB, 9))
	if stage == "writing" {
		r = io.MultiReader(io.LimitReader(r, MiB), crashReader{})
	}
	s.Put(context.Background(), r, "crash.bin", "")
	t.Fatalf("did not crash at %q", stage)
}

type crashReader struct{}

func (crashReader) Read([]byte) (int, error) { os.Exit(3); return 0, nil }

// TestFileStoreCrash kills a process that uploads at each stage of the
// upload and checks what a restart finds: the whole file, or nothing.
func TestFileStoreCrash(t *testing.T) {
	content := binaryContent(4*MiB, 9)
	id := hexSum(content)
	for _, c := range []struct {
		stage  string
		stored bool
	}{
		{"writing", false}, // half the content written
		{"synced", false},  // written and fsynced, not renamed
		{"meta", false},    // metadata renamed into place, content not
		{"content", true},  // content renamed, directory not synced
	} {
		t.Run(c.stage, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestFileStoreCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "SVC_TEST_CRASH_DIR="+dir, "SVC_TEST_CRASH_STAGE="+c.stage)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 3 {
				t.Fatalf("child: %v\n%s", err, out)
			}
			left := dirNames(t, dir)
			if !slices.ContainsFunc(left, func(n string) bool { return strings.HasPrefix(n, storeTmpPrefix) }) && !c.stored {
				t.Fatalf("the crash left no temporary: %q", left)
			}
			s := openTestStore(t, FileStoreConfig{Dir: dir})
			if !c.stored {
				wantStoredOnDisk(t, dir)
				_, _, err := s.Open(id)
				wantCode(t, err, CodeNotFound)
				if _, exists := put(t, s, content, "", ""); exists {
					t.Error("upload after the crash: already_exists")
				}
				return
			}
			wantStoredOnDisk(t, dir, id)
			info, err := s.Stat(id)
			if err != nil || *info.Filename != "crash.bin" || info.Size != int64(len(content)) {
				t.Fatalf("Stat: %+v %v", info, err)
			}
			if got := readStored(t, s, id); !bytes.Equal(got, content) {
				t.Error("content differs")
			}
		})
	}
}

// The startup sweep: temporaries and metadata without content go, content
// without metadata stays with rebuilt metadata, a size that differs from
// the metadata's means damage.
func TestFileStoreStartupSweep(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, FileStoreConfig{Dir: dir})
	keep, _ := put(t, s, []byte("keep"), "k", "")
	noMeta, _ := put(t, s, []byte("no metadata"), "n", "")
	short, _ := put(t, s, []byte("truncated later"), "t", "")
	s.Close()
	orphan := hexSum([]byte("orphan"))
	for name, content := range map[string]string{
		storeTmpPrefix + "123":   "half an upload",
		orphan + storeMetaExt:    `{"id":"` + orphan + `","size":6}`,
		noMeta.ID + storeMetaExt: "",
		short.ID:                 "trunc",
		"README":                 "not ours",
	} {
		if content == "" {
			os.Remove(filepath.Join(dir, name))
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s = openTestStore(t, FileStoreConfig{Dir: dir})
	want := []string{"README", keep.ID, keep.ID + storeMetaExt, noMeta.ID, noMeta.ID + storeMetaExt}
	slices.Sort(want)
	if got := dirNames(t, dir); !slices.Equal(got, want) {
		t.Errorf("on disk: %q\nwant %q", got, want)
	}
	info, err := s.Stat(noMeta.ID)
	if err != nil || info.Filename != nil || info.Size != 11 {
		t.Errorf("rebuilt metadata: %+v %v", info, err)
	}
	if got := readStored(t, s, noMeta.ID); string(got) != "no metadata" {
		t.Errorf("content %q", got)
	}
	_, err = s.Stat(short.ID)
	wantCode(t, err, CodeNotFound)
	if n, b := s.Usage(); n != 2 || b != 4+11 {
		t.Errorf("Usage: %d files %d bytes", n, b)
	}
}

// corrupt flips a byte of the stored content in place and moves its
// modification time, as a write would on any filesystem granularity.
func corrupt(t testing.TB, dir, id string) {
	t.Helper()
	p := filepath.Join(dir, id)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, 10); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x80
	if _, err := f.WriteAt(b, 10); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, time.Time{}, fi.ModTime().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
}

func TestFileStoreCorrupt(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, FileStoreConfig{Dir: dir})
	content := binaryContent(64*KiB, 4)
	a, _ := put(t, s, content, "", "")
	b, _ := put(t, s, content[1:], "", "")
	readStored(t, s, a.ID) // verified once: the damage happens later

	corrupt(t, dir, a.ID)
	_, _, err := s.Open(a.ID)
	wantCode(t, err, CodeNotFound)
	_, err = s.Stat(a.ID)
	wantCode(t, err, CodeNotFound)
	wantStoredOnDisk(t, dir, b.ID)

	// Damage while the store is down is found on first use.
	s.Close()
	corrupt(t, dir, b.ID)
	s = openTestStore(t, FileStoreConfig{Dir: dir})
	if _, err := s.Stat(b.ID); err != nil {
		t.Fatalf("Stat does not read the content: %v", err)
	}
	_, _, err = s.Open(b.ID)
	wantCode(t, err, CodeNotFound)
	wantStoredOnDisk(t, dir)
	if n, bytes := s.Usage(); n != 0 || bytes != 0 {
		t.Errorf("Usage: %d files %d bytes", n, bytes)
	}
	// A fresh upload stores it again.
	if _, exists := put(t, s, content, "", ""); exists {
		t.Error("upload after the damage: already_exists")
	}
	if got := readStored(t, s, a.ID); !bytes.Equal(got, content) {
		t.Error("content differs")
	}
}

func TestFileStoreVerifiesOnce(t *testing.T) {
	s := openTestStore(t, FileStoreConfig{})
	info, _ := put(t, s, binaryContent(MiB, 5), "", "")
	for range 5 {
		readStored(t, s, info.ID)
	}
	if n := s.hashed.Load(); n != 1 {
		t.Errorf("5 opens hashed the content %d times, want 1", n)
	}
	// A new version of the file on disk (same content, new inode) is
	// verified again.
	p := filepath.Join(s.dir, info.ID)
	b, _ := os.ReadFile(p)
	os.Remove(p)
	os.WriteFile(p, b, 0o600)
	readStored(t, s, info.ID)
	readStored(t, s, info.ID)
	if n := s.hashed.Load(); n != 2 {
		t.Errorf("hashed %d times, want 2", n)
	}
}

func TestFileStoreRestart(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	cfg := FileStoreConfig{Dir: dir, TTL: 24 * time.Hour, Now: clock.Now}
	s := openTestStore(t, cfg)
	var want []StoredFile
	var contents [][]byte
	for i := range 3 {
		c := binaryContent(1000*i+10, uint64(i))
		info, _ := put(t, s, c, fmt.Sprintf("f%d.bin", i), "application/octet-stream")
		want = append(want, info)
		contents = append(contents, c)
		clock.Add(time.Minute)
	}
	clock.Add(20 * time.Hour)
	readStored(t, s, want[0].ID) // used: kept 24 hours from now
	s.Close()
	_, _, err := s.Put(context.Background(), strings.NewReader("x"), "", "")
	wantCode(t, err, CodeShuttingDown)

	clock.Add(10 * time.Hour) // the others expired while the store was down
	s = openTestStore(t, cfg)
	got := s.List()
	if len(got) != 1 || got[0].ID != want[0].ID || *got[0].Filename != "f0.bin" ||
		*got[0].ContentType != "application/octet-stream" || !got[0].CreatedAt.Equal(want[0].CreatedAt) {
		t.Fatalf("after restart: %+v, want %+v", got, want[0])
	}
	wantStoredOnDisk(t, dir, want[0].ID)
	if b := readStored(t, s, want[0].ID); !bytes.Equal(b, contents[0]) {
		t.Error("content differs")
	}
	s.Close()

	// Without expiry in between, everything is back.
	dir2 := t.TempDir()
	s = openTestStore(t, FileStoreConfig{Dir: dir2})
	for i, c := range contents {
		put(t, s, c, fmt.Sprintf("f%d.bin", i), "")
	}
	before := s.List()
	s.Close()
	s = openTestStore(t, FileStoreConfig{Dir: dir2})
	after := s.List()
	a, _ := json.Marshal(before)
	b, _ := json.Marshal(after)
	if string(a) != string(b) {
		t.Errorf("before restart %s\nafter %s", a, b)
	}
	if _, exists := put(t, s, contents[1], "", ""); !exists {
		t.Error("after restart: not already_exists")
	}
}

func TestFileStoreLocked(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, FileStoreConfig{Dir: dir})
	if _, err := OpenFileStore(FileStoreConfig{Dir: dir}); err == nil {
		t.Fatal("a second store opened the same directory")
	}
	s.Close()
	s.Close()
	openTestStore(t, FileStoreConfig{Dir: dir})
}

func TestFileStoreConfig(t *testing.T) {
	for _, cfg := range []FileStoreConfig{
		{},
		{Dir: t.TempDir(), MaxBytes: -1},
		{Dir: t.TempDir(), TTL: -time.Second},
		{Dir: t.TempDir(), MaxUploadBytes: -1},
		{Dir: t.TempDir(), MaxConcurrentUploads: -1},
	} {
		if s, err := OpenFileStore(cfg); err == nil {
			s.Close()
			t.Errorf("%+v: no error", cfg)
		}
	}
	s := openTestStore(t, FileStoreConfig{})
	if s.maxSize != 4*GiB || s.ttl != 24*time.Hour || s.maxPut != 64*MiB || cap(s.uploads) != 8 {
		t.Errorf("defaults: %d %v %d %d", s.maxSize, s.ttl, s.maxPut, cap(s.uploads))
	}
}

func TestFileStoreCancel(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, FileStoreConfig{Dir: dir})
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, _, err := s.Put(ctx, pr, "", "")
		done <- err
	}()
	pw.Write(make([]byte, 1000))
	cancel()
	// Put sees the end of ctx before its next read, or when it fails.
	pw.CloseWithError(io.ErrUnexpectedEOF)
	wantCode(t, <-done, CodeCancelled)
	wantStoredOnDisk(t, dir)
	if s.reserved != 0 {
		t.Errorf("%d bytes still reserved", s.reserved)
	}
}

func TestFileStoreCloseDuringUpload(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenFileStore(FileStoreConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, _, err := s.Put(context.Background(), pr, "", "")
		done <- err
	}()
	pw.Write(make([]byte, 1000)) // the upload is in progress
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	<-s.stop
	go pw.Write(make([]byte, 1000)) // its next read ends it
	wantCode(t, <-done, CodeShuttingDown)
	pw.Close()
	<-closed
	wantStoredOnDisk(t, dir)
	// Dir is free for the next store.
	openTestStore(t, FileStoreConfig{Dir: dir})
}

// blockReader yields size bytes: a counter, then copies of block.
type blockReader struct {
	block []byte
	seed  uint64
	off   int64
	size  int64
}

func (r *blockReader) Read(p []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.size-r.off)]
	n := 0
	for n < len(p) {
		n += copy(p[n:], r.block[(r.off+int64(n))%int64(len(r.block)):])
	}
	if r.off == 0 && len(p) >= 8 {
		copy(p, strconv.AppendUint(nil, r.seed, 16))
	}
	r.off += int64(n)
	return n, nil
}

// An upload of 64 MiB allocates a bounded amount: it streams.
func TestFileStorePutMemory(t *testing.T) {
	const size = 64 * MiB
	s := openTestStore(t, FileStoreConfig{})
	block := binaryContent(MiB, 6)
	put(t, s, []byte("warm up"), "", "")
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	info, _, err := s.Put(context.Background(), &blockReader{block: block, size: size}, "", "")
	runtime.ReadMemStats(&m1)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != size {
		t.Fatalf("size %d", info.Size)
	}
	if d := m1.TotalAlloc - m0.TotalAlloc; d > 4*MiB {
		t.Errorf("a %d MiB upload allocated %.1f MiB", size/MiB, float64(d)/MiB)
	} else {
		t.Logf("a %d MiB upload allocated %d KiB", size/MiB, d/KiB)
	}
}

// vmHWM returns the peak resident set size of the process.
func vmHWM(t testing.TB) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb * KiB
		}
	}
	t.Skip("no VmHWM in /proc/self/status")
	return 0
}

// benchmarkPut uploads size bytes per iteration (distinct contents, each
// deleted after) and reports the peak RSS of the process and its growth
// during the benchmark. VmHWM is process-wide and never falls: compare
// sizes in separate runs (-bench 'FileStorePut8MiB$' and -bench 'FileStorePut64MiB$').
func benchmarkPut(b *testing.B, size int64) {
	s := openTestStore(b, FileStoreConfig{MaxUploadBytes: size})
	block := binaryContent(MiB, 8)
	runtime.GC()
	hwm0 := vmHWM(b)
	b.SetBytes(size)
	b.ReportAllocs()
	var i uint64
	for b.Loop() {
		i++
		info, exists, err := s.Put(context.Background(), &blockReader{block: block, seed: i, size: size}, "", "")
		if err != nil || exists {
			b.Fatalf("Put: %v exists %v", err, exists)
		}
		if err := s.Delete(info.ID); err != nil {
			b.Fatal(err)
		}
	}
	hwm := vmHWM(b)
	b.ReportMetric(float64(hwm)/MiB, "peak-RSS-MiB")
	b.ReportMetric(float64(hwm-hwm0)/MiB, "peak-RSS-growth-MiB")
}

func BenchmarkFileStorePut8MiB(b *testing.B)  { benchmarkPut(b, 8*MiB) }
func BenchmarkFileStorePut64MiB(b *testing.B) { benchmarkPut(b, 64*MiB) }
