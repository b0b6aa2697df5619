package svc

// The file store's contract, run against each backend: the directory
// (the embedded default) and an S3 object store (a real SeaweedFS on
// loopback, seaweedtest), with this process's cache in a directory.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/svc-sandbox/svc/seaweedtest"
)

// fileBackend opens file stores of one backend for a test. Stores opened
// by one fileBackend share their files, as the instances of a fleet do
// (the dir backend has one instance).
type fileBackend struct {
	name string
	open func(t *testing.T, cfg FileStoreConfig) *FileStore
	// objects lists what the backend holds, by its own means.
	objects func(t *testing.T) []string
}

var s3Server *seaweedtest.Server // shared by the tests of this process

// fileBackends returns the backends to run the contract against.
func fileBackends(t *testing.T) []fileBackend {
	var dirOf = map[*testing.T]string{}
	dir := fileBackend{name: "dir",
		open: func(t *testing.T, cfg FileStoreConfig) *FileStore {
			if dirOf[t] == "" {
				dirOf[t] = t.TempDir()
			}
			cfg.Dir = dirOf[t]
			return openTestStore(t, cfg)
		},
		objects: func(t *testing.T) []string {
			var ids []string
			for _, n := range dirNames(t, dirOf[t]) {
				if ValidFileID(n) {
					ids = append(ids, n)
				}
			}
			return ids
		}}
	s3 := fileBackend{name: "s3",
		open: func(t *testing.T, cfg FileStoreConfig) *FileStore {
			srv := startS3(t)
			cfg.URL = srv.URL(prefixOf(t))
			return openTestStore(t, cfg)
		},
		objects: func(t *testing.T) []string {
			srv := startS3(t)
			var ids []string
			for oi := range srv.Client().ListObjects(context.Background(), srv.Bucket, minio.ListObjectsOptions{Prefix: prefixOf(t), Recursive: true}) {
				if oi.Err != nil {
					t.Fatal(oi.Err)
				}
				ids = append(ids, strings.TrimPrefix(oi.Key, prefixOf(t)))
			}
			return ids
		}}
	return []fileBackend{dir, s3}
}

// startS3 starts the process's SeaweedFS once and gives t its keys.
func startS3(t *testing.T) *seaweedtest.Server {
	t.Helper()
	if s3Server == nil {
		s3Server = seaweedtest.Start(&processTB{t})
	}
	s3Server.SetEnv(t)
	return s3Server
}

// processTB is t for a server that outlives t: its cleanup is the
// process's end (the server dies with it: Pdeathsig).
type processTB struct{ *testing.T }

func (p *processTB) Cleanup(func()) {}
func (p *processTB) TempDir() string {
	d, err := os.MkdirTemp("", "svc-seaweedfs-")
	if err != nil {
		p.Fatal(err)
	}
	return d
}

// prefixOf is the key prefix of t's files: one per test.
func prefixOf(t *testing.T) string {
	return "contract/" + strings.NewReplacer("/", "-", " ", "_").Replace(t.Name()) + "/"
}

// forEachBackend runs f against each backend.
func forEachBackend(t *testing.T, f func(t *testing.T, b fileBackend)) {
	for _, b := range fileBackends(t) {
		t.Run(b.name, func(t *testing.T) { f(t, b) })
	}
}

// cutReader returns its content, then an error: a client gone.
type cutReader struct{ r io.Reader }

func (f *cutReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, errors.New("connection reset by peer")
	}
	return n, err
}

func TestFileStoreContractRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b fileBackend) {
		s := b.open(t, FileStoreConfig{})
		content := binaryContent(300*KiB, 1)
		info, exists := put(t, s, content, "input.txt", "text/plain")
		if exists || info.ID != hexSum(content) || info.Size != int64(len(content)) {
			t.Fatalf("Put: %+v exists=%v", info, exists)
		}
		if *info.Filename != "input.txt" || *info.ContentType != "text/plain" {
			t.Errorf("Put: %+v", info)
		}
		again, exists := put(t, s, content, "other.txt", "")
		if !exists || *again.Filename != "input.txt" || again.ID != info.ID {
			t.Errorf("second Put: %+v exists=%v", again, exists)
		}
		if got := readStored(t, s, info.ID); !bytes.Equal(got, content) {
			t.Error("Open: content differs")
		}
		st, err := s.Stat(info.ID)
		if err != nil || st.ID != info.ID || st.Size != info.Size || *st.Filename != "input.txt" {
			t.Errorf("Stat: %+v %v", st, err)
		}
		empty, _ := put(t, s, nil, "", "")
		if list := s.List(); len(list) != 2 || list[0].ID != empty.ID && list[1].ID != empty.ID {
			t.Errorf("List: %+v", list)
		}
		if got := b.objects(t); !slices.Contains(got, info.ID) || !slices.Contains(got, empty.ID) {
			t.Errorf("the backend holds %q", got)
		}
		if err := s.Delete(info.ID); err != nil {
			t.Fatal(err)
		}
		_, _, err = s.Open(info.ID)
		wantCode(t, err, CodeNotFound)
		wantCode(t, s.Delete(info.ID), CodeNotFound)
		_, err = s.Stat(info.ID)
		wantCode(t, err, CodeNotFound)
		if got := b.objects(t); slices.Contains(got, info.ID) {
			t.Errorf("after Delete the backend holds %q", got)
		}
		wantCode(t, s.Delete("nothex"), CodeInvalidRequest)
	})
}

func TestFileStoreContractInterrupted(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b fileBackend) {
		s := b.open(t, FileStoreConfig{MaxUploadBytes: MiB})
		content := binaryContent(700*KiB, 2)
		_, _, err := s.Put(context.Background(), &cutReader{bytes.NewReader(content)}, "", "")
		wantCode(t, err, CodeInvalidRequest)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, _, err = s.Put(ctx, bytes.NewReader(content), "", "")
		wantCode(t, err, CodeCancelled)
		_, _, err = s.Put(context.Background(), bytes.NewReader(binaryContent(MiB+1, 3)), "", "")
		wantCode(t, err, CodePayloadTooLarge)
		if got := b.objects(t); len(got) != 0 {
			t.Errorf("interrupted uploads left %q", got)
		}
		if list := s.List(); len(list) != 0 {
			t.Errorf("List: %+v", list)
		}
		_, _, err = s.Open(hexSum(content))
		wantCode(t, err, CodeNotFound)
	})
}

func TestFileStoreContractQuota(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b fileBackend) {
		s := b.open(t, FileStoreConfig{MaxBytes: MiB})
		a, bb := binaryContent(600*KiB, 4), binaryContent(600*KiB, 5)
		ia, _ := put(t, s, a, "", "")
		_, _, err := s.Put(context.Background(), bytes.NewReader(bb), "", "")
		wantCode(t, err, CodeCapacityExhausted)
		if _, exists := put(t, s, a, "", ""); !exists {
			t.Error("dedupe in a full store: not already_exists")
		}
		if err := s.Delete(ia.ID); err != nil {
			t.Fatal(err)
		}
		put(t, s, bb, "", "")
		if got := b.objects(t); len(got) != 1 || got[0] != hexSum(bb) {
			t.Errorf("the backend holds %q", got)
		}
	})
}

func TestFileStoreContractTTL(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b fileBackend) {
		clock := &fakeClock{t: time.Now()}
		s := b.open(t, FileStoreConfig{TTL: time.Hour, Now: clock.Now})
		a, _ := put(t, s, []byte("a"), "", "")
		clock.Add(time.Hour + time.Hour/10 + time.Second) // the shared store's bound
		_, _, err := s.Open(a.ID)
		wantCode(t, err, CodeNotFound)
		if list := s.List(); len(list) != 0 {
			t.Errorf("List: %+v", list)
		}
		if _, exists := put(t, s, []byte("a"), "", ""); exists {
			t.Error("upload after expiry: already_exists")
		}
	})
}

// An output is stored through the same path as an upload.
func TestFileStoreContractOutput(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b fileBackend) {
		s := b.open(t, FileStoreConfig{})
		content := binaryContent(100*KiB, 6)
		info, err := s.putOutput(context.Background(), bytes.NewReader(content), "out.txt", MiB)
		if err != nil || info.ID != hexSum(content) || *info.Filename != "out.txt" {
			t.Fatalf("putOutput: %+v %v", info, err)
		}
		again, err := s.putOutput(context.Background(), bytes.NewReader(content), "other.txt", MiB)
		if err != nil || *again.Filename != "out.txt" {
			t.Fatalf("putOutput again: %+v %v", again, err)
		}
		if got := readStored(t, s, info.ID); !bytes.Equal(got, content) {
			t.Error("content differs")
		}
		if got := b.objects(t); !slices.Equal(got, []string{info.ID}) {
			t.Errorf("the backend holds %q", got)
		}
	})
}

func minioPutOptions() minio.PutObjectOptions   { return minio.PutObjectOptions{} }
func minioStatOptions() minio.StatObjectOptions { return minio.StatObjectOptions{} }
