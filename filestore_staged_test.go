package svc

// Uploads larger than one part to the S3 backend: sent in parts while
// they arrive, to a staged object that the file's object refers to once
// the upload is hashed (filestore_stream.go). Against a real SeaweedFS.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/svc-sandbox/svc/seaweedtest"
)

// stagedSize is larger than two parts: three parts, the last short.
const stagedSize = 2*minStagePart + 4*MiB + 17

// storeObjects lists the objects under prefix: keys relative to it, and
// the multipart uploads in progress under it.
func storeObjects(t *testing.T, srv *seaweedtest.Server, prefix string) (keys []string, uploads int) {
	t.Helper()
	ctx := context.Background()
	for oi := range srv.Client().ListObjects(ctx, srv.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if oi.Err != nil {
			t.Fatal(oi.Err)
		}
		keys = append(keys, strings.TrimPrefix(oi.Key, prefix))
	}
	res, err := minio.Core{Client: srv.Client()}.ListMultipartUploads(ctx, srv.Bucket, prefix, "", "", "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	return keys, len(res.Uploads)
}

// staged returns the keys of staged contents among keys.
func staged(keys []string) []string {
	var out []string
	for _, k := range keys {
		if strings.HasPrefix(k, s3StagedDir) {
			out = append(out, k)
		}
	}
	return out
}

func TestFileStoreStaged(t *testing.T) {
	srv := startS3(t)
	prefix := prefixOf(t)
	cfg := FileStoreConfig{URL: srv.URL(prefix), MaxUploadBytes: 64 * MiB}
	a, b := openTestStore(t, cfg), openTestStore(t, cfg)
	content := binaryContent(stagedSize, 1)
	info, exists := put(t, a, content, "big.bin", "application/x-test")
	if exists || info.ID != hexSum(content) || info.Size != stagedSize {
		t.Fatalf("Put: %+v exists=%v", info, exists)
	}
	keys, uploads := storeObjects(t, srv, prefix)
	if len(keys) != 2 || !slices.Contains(keys, info.ID) || len(staged(keys)) != 1 || uploads != 0 {
		t.Fatalf("the store holds %q and %d uploads in progress, want the file and its staged content", keys, uploads)
	}

	// Another instance: stat, list, read (fetched through the reference).
	st, err := b.Stat(info.ID)
	if err != nil || st.Size != stagedSize || *st.Filename != "big.bin" || *st.ContentType != "application/x-test" {
		t.Fatalf("Stat through another instance: %+v %v", st, err)
	}
	fresh := openTestStore(t, cfg)
	list, err := fresh.ListFiles(context.Background())
	if err != nil || len(list) != 1 || list[0].Size != stagedSize {
		t.Fatalf("ListFiles through a fresh instance: %+v %v", list, err)
	}
	if got := readStored(t, b, info.ID); !bytes.Equal(got, content) {
		t.Fatal("the content read through another instance differs")
	}
	if err := fresh.sweepRemote(context.Background()); err != nil {
		t.Fatal(err)
	}
	if files, used := fresh.fleetFiles, fresh.fleetUsed; files != 1 || used != stagedSize {
		t.Errorf("a fresh listing counts %d files, %d bytes; want 1, %d", files, used, stagedSize)
	}

	// The same content again, through the other instance: it exists, and
	// what it staged is gone.
	again, exists := put(t, b, content, "other.bin", "")
	if !exists || again.ID != info.ID || *again.Filename != "big.bin" {
		t.Errorf("second upload: %+v exists=%v", again, exists)
	}
	if keys, uploads := storeObjects(t, srv, prefix); len(keys) != 2 || uploads != 0 {
		t.Errorf("after an upload of content stored already the store holds %q and %d uploads", keys, uploads)
	}

	// A use renews the file's object, its reference kept.
	a.renew(context.Background(), objectInfo{info: info, ref: prefix + staged(keys)[0]})
	if got := readStored(t, openTestStore(t, cfg), info.ID); !bytes.Equal(got, content) {
		t.Fatal("after a renewal the content differs")
	}

	if err := b.Delete(info.ID); err != nil {
		t.Fatal(err)
	}
	if keys, uploads := storeObjects(t, srv, prefix); len(keys) != 0 || uploads != 0 {
		t.Errorf("after Delete the store holds %q and %d uploads", keys, uploads)
	}
	a.fresh = 0
	_, _, err = a.Open(info.ID)
	wantCode(t, err, CodeNotFound)
}

// cancelReader gives n bytes of r, then cancels and fails.
type cancelReader struct {
	r      io.Reader
	n      int
	cancel func()
}

func (c *cancelReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		c.cancel()
		return 0, errors.New("connection reset by peer")
	}
	n, err := c.r.Read(p[:min(len(p), c.n)])
	c.n -= n
	return n, err
}

// An upload cut after its first parts leaves nothing in the store: not
// its parts, not an upload in progress.
func TestFileStoreStagedInterrupted(t *testing.T) {
	srv := startS3(t)
	prefix := prefixOf(t)
	s := openTestStore(t, FileStoreConfig{URL: srv.URL(prefix), MaxUploadBytes: 64 * MiB})
	content := binaryContent(stagedSize, 2)
	_, _, err := s.Put(context.Background(), &cutReader{bytes.NewReader(content)}, "", "")
	wantCode(t, err, CodeInvalidRequest)
	ctx, cancel := context.WithCancel(context.Background())
	_, _, err = s.Put(ctx, &cancelReader{r: bytes.NewReader(content), n: 2*minStagePart + MiB, cancel: cancel}, "", "")
	wantCode(t, err, CodeCancelled)
	_, _, err = s.Put(context.Background(), bytes.NewReader(binaryContent(64*MiB+1, 3)), "", "")
	wantCode(t, err, CodePayloadTooLarge)
	if keys, uploads := storeObjects(t, srv, prefix); len(keys) != 0 || uploads != 0 {
		t.Errorf("interrupted uploads left %q and %d uploads in progress", keys, uploads)
	}
}

// What an instance killed mid-upload leaves (parts of an upload in
// progress; a staged object no file refers to) is removed by the tidy of
// any instance once it is older than the cutoff; content a file refers
// to is kept.
func TestFileStoreStagedTidy(t *testing.T) {
	srv := startS3(t)
	prefix := prefixOf(t)
	cfg := FileStoreConfig{URL: srv.URL(prefix), MaxUploadBytes: 64 * MiB}
	s := openTestStore(t, cfg)
	kept := binaryContent(stagedSize, 4)
	info, _ := put(t, s, kept, "", "")
	ctx := context.Background()
	part := binaryContent(minStagePart, 5)
	// Killed while sending parts.
	inProgress, err := s.remote.stage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := inProgress.part(ctx, 1, bytes.NewReader(part), int64(len(part))); err != nil {
		t.Fatal(err)
	}
	// Killed after the content was complete, before its file was written.
	unlinked, err := s.remote.stage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := unlinked.part(ctx, 1, bytes.NewReader(part), int64(len(part))); err != nil {
		t.Fatal(err)
	}
	if _, err := unlinked.complete(ctx); err != nil {
		t.Fatal(err)
	}
	keys, uploads := storeObjects(t, srv, prefix)
	if len(staged(keys)) != 2 || uploads != 1 {
		t.Fatalf("before: %q, %d uploads in progress", keys, uploads)
	}

	// A fresh instance (nothing seen yet) tidies: nothing is old enough.
	other := openTestStore(t, cfg)
	if n, err := other.remote.tidy(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("tidy of young content: removed %d, %v", n, err)
	}
	// Later: the leftovers go, the file's content stays.
	if n, err := other.remote.tidy(ctx, time.Now().Add(time.Minute)); err != nil || n != 2 {
		t.Errorf("tidy: removed %d, %v; want 2", n, err)
	}
	keys, uploads = storeObjects(t, srv, prefix)
	if len(keys) != 2 || !slices.Contains(keys, info.ID) || uploads != 0 {
		t.Errorf("after tidy: %q, %d uploads in progress; want the file and its content", keys, uploads)
	}
	if got := readStored(t, other, info.ID); !bytes.Equal(got, kept) {
		t.Error("the kept file's content differs")
	}
}

// A store that hangs in the middle of a staged upload: the upload is
// refused (capacity_exhausted) within the store's bound, and once the
// store is back what it staged is removed.
func TestFileStoreStagedStoreFrozen(t *testing.T) {
	srv := seaweedtest.Start(t)
	srv.SetEnv(t)
	prefix := "staged-frozen/"
	s := openTestStore(t, FileStoreConfig{URL: srv.URL(prefix) + "&timeout_ms=500", MaxUploadBytes: 64 * MiB})
	content := binaryContent(stagedSize, 6)
	pr, pw := io.Pipe()
	go func() {
		pw.Write(content[:minStagePart+MiB]) // the first part is queued
		srv.Freeze()
		pw.Write(content[minStagePart+MiB:])
		pw.Close()
	}()
	t0 := time.Now()
	_, _, err := s.Put(context.Background(), pr, "", "")
	pr.Close() // the writer's rest, unread
	wantCode(t, err, CodeCapacityExhausted)
	// Each part has its deadline (timeout_ms, and 1 s per 8 MiB).
	if d := time.Since(t0); d > storeBound+3*time.Second {
		t.Errorf("the upload answered after %v", d)
	}
	srv.Thaw()
	// Whatever the frozen store kept of the upload is removed, by this
	// instance or by a tidy.
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := s.remote.tidy(context.Background(), time.Now().Add(time.Minute)); err == nil {
			if keys, uploads := storeObjects(t, srv, prefix); len(keys) == 0 && uploads == 0 {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("the store still holds %q and %d uploads", keys, uploads)
			}
		} else if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
