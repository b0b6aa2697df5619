package svc

// The shared file store when its object store fails: killed (SIGKILL,
// connections refused) and frozen (SIGSTOP, nothing answered), against a
// real SeaweedFS.

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/svc-sandbox/svc/seaweedtest"
)

// storeBound is what an upload may wait for a failing store: the
// timeout_ms of the tests' URL, with a transfer's allowance and slack for
// a loaded machine.
const (
	faultTimeout = 500 * time.Millisecond
	storeBound   = faultTimeout + 5*time.Second
)

func TestFileStoreStoreDown(t *testing.T) {
	for _, how := range []string{"killed", "frozen"} {
		t.Run(how, func(t *testing.T) {
			srv := seaweedtest.Start(t)
			srv.SetEnv(t)
			s := openTestStore(t, FileStoreConfig{URL: srv.URL("faults/") + "&timeout_ms=" + "500"})
			cached, _ := put(t, s, binaryContent(100*KiB, 1), "", "")
			// Another instance's file, not in this one's cache.
			other := openTestStore(t, FileStoreConfig{URL: srv.URL("faults/")})
			notCached, _ := put(t, other, binaryContent(100*KiB, 2), "", "")

			if how == "killed" {
				srv.Kill()
			} else {
				srv.Freeze()
			}
			for i := range 3 {
				t0 := time.Now()
				_, _, err := s.Put(context.Background(), bytes.NewReader(binaryContent(100*KiB, uint64(10+i))), "", "")
				wantCode(t, err, CodeCapacityExhausted)
				if d := time.Since(t0); d > storeBound {
					t.Errorf("upload %d answered after %v, want at most %v", i, d, storeBound)
				}
			}
			if !s.StoreDown() {
				t.Error("StoreDown: false")
			}
			// A request whose files are cached still gets them; the
			// others are refused at once, clearly.
			s.fresh = 0 // every Open asks the store
			if got := readStored(t, s, cached.ID); len(got) != 100*KiB {
				t.Errorf("cached file: %d bytes", len(got))
			}
			t0 := time.Now()
			_, _, err := s.Open(notCached.ID)
			wantCode(t, err, CodeCapacityExhausted)
			if d := time.Since(t0); d > storeBound {
				t.Errorf("Open answered after %v", d)
			}
			_, err = s.ListFiles(context.Background())
			wantCode(t, err, CodeCapacityExhausted)

			if how == "killed" {
				srv.Restart()
			} else {
				srv.Thaw()
			}
			// Everything works again once the breaker's probe gets through.
			deadline := time.Now().Add(2 * time.Minute)
			for {
				_, _, err := s.Put(context.Background(), bytes.NewReader(binaryContent(100*KiB, 20)), "", "")
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the store is back, uploads still fail: %v", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if got := readStored(t, s, notCached.ID); len(got) != 100*KiB {
				t.Errorf("file of another instance: %d bytes", len(got))
			}
			if s.StoreDown() {
				t.Error("StoreDown after recovery")
			}
		})
	}
}

// The cache is read through once: files used many times are fetched once,
// and the least recently used go first past cache_bytes.
func TestFileStoreReadThroughCache(t *testing.T) {
	srv := startS3(t)
	url := srv.URL(prefixOf(t))
	a := openTestStore(t, FileStoreConfig{URL: url})
	b := openTestStore(t, FileStoreConfig{URL: url + "&cache_bytes=300KiB"})
	var ids []string
	for i := range 3 {
		info, _ := put(t, a, binaryContent(100*KiB, uint64(30+i)), "", "")
		ids = append(ids, info.ID)
	}
	for range 5 {
		for _, id := range ids {
			readStored(t, b, id)
		}
	}
	if n := b.fetches.Load(); n != 3 {
		t.Errorf("3 files used 5 times each: fetched %d times", n)
	}
	big, _ := put(t, a, binaryContent(150*KiB, 40), "", "")
	readStored(t, b, big.ID)
	if n, bytes := b.CacheUsage(); bytes > 300*KiB {
		t.Errorf("cache holds %d files, %d bytes, over its 300 KiB", n, bytes)
	}
	readStored(t, b, ids[2])
	if n := b.fetches.Load(); n != 4 {
		t.Errorf("the most recently used file was evicted: %d fetches", n)
	}
	readStored(t, b, ids[0])
	if n := b.fetches.Load(); n != 5 {
		t.Errorf("the least recently used file was kept: %d fetches", n)
	}
}

// An object of the store that does not hash to its id is never served,
// and removed.
func TestFileStoreCorruptObject(t *testing.T) {
	srv := startS3(t)
	s := openTestStore(t, FileStoreConfig{URL: srv.URL(prefixOf(t))})
	content := binaryContent(10*KiB, 50)
	id := hexSum(content)
	bad := append([]byte("x"), content[1:]...)
	ctx := context.Background()
	if _, err := srv.Client().PutObject(ctx, srv.Bucket, prefixOf(t)+id, bytes.NewReader(bad), int64(len(bad)), minioPutOptions()); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.Open(id)
	wantCode(t, err, CodeNotFound)
	if _, err := srv.Client().StatObject(ctx, srv.Bucket, prefixOf(t)+id, minioStatOptions()); err == nil {
		t.Error("the damaged object is still in the store")
	}
}
