package scaleout

// TestFleetFileStore: three svc serve instances behind nginx that share
// their file store, an S3 object store (a real SeaweedFS on loopback,
// FILESTORE_URL), and Redis as their step cache. A file uploaded through
// one instance is used and downloaded through the others with no
// affinity header, and deleted for all through a third; an instance
// killed (SIGKILL) in a burst of judged submissions and uploads loses no
// request the client retries, and no stored file is lost or damaged.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/seaweedtest"
)

// fleetPrefix is where the fleet keeps its files in the bucket.
const fleetPrefix = "fleet/"

func startFleet(t *testing.T) (*cluster, *seaweedtest.Server) {
	t.Helper()
	requirements(t) // skip before SeaweedFS starts
	s3 := seaweedtest.Start(t)
	cl := startClusterEnv(t, "fleet", append([]string{"FILESTORE_URL=" + s3.URL(fleetPrefix)}, s3.Env()...)...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("SeaweedFS log:\n%s", s3.Log())
		}
	})
	return cl, s3
}

func TestFleetFileStore(t *testing.T) {
	start := time.Now()
	cl, s3 := startFleet(t)
	t.Logf("started SeaweedFS, redis, %d instances and nginx in %v", numInstances, time.Since(start).Round(time.Millisecond))
	t.Run("OneStoreForAll", func(t *testing.T) { testOneStoreForAll(t, cl) })
	t.Run("KillDuringJudging", func(t *testing.T) { testKillDuringJudging(t, cl, s3) })
	t.Logf("fleet test took %v", time.Since(start).Round(time.Millisecond))
}

// sumTask is a task that prints the sha256 of the stored file id.
func sumTask(id string) svc.Task {
	return svc.Task{Cmd: "sha256sum", Args: []string{"input"}, Files: map[string]svc.File{"input": {FileID: id}}}
}

// wantSums checks that each result printed the sum of its file.
func wantSums(t *testing.T, resp *svc.Response, ids []string) {
	t.Helper()
	for i, id := range ids {
		r := resp.Results[i].Results[0]
		if r.Outcome != svc.OutcomeExited || r.ExitCode != 0 || !strings.HasPrefix(r.Stdout, id+" ") {
			t.Fatalf("task %d: %s exit %v stdout %q stderr %q, want the sum %s", i, r.Outcome, r.ExitCode, r.Stdout, r.Stderr, id)
		}
	}
}

func testOneStoreForAll(t *testing.T, cl *cluster) {
	a, b, c := cl.instances[0], cl.instances[1], cl.instances[2]
	content := make([]byte, 3<<20+17)
	rand.NewChaCha8([32]byte{1}).Read(content)
	up, err := a.c.UploadBytes(ctx(t, time.Minute), "input.bin", content)
	if err != nil {
		t.Fatal(err)
	}
	// Used through the others, with no affinity: the store is one.
	for _, in := range []*instance{b, c} {
		resp, err := in.c.Run(ctx(t, time.Minute), svc.Single(sumTask(up.FileID)))
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		wantSums(t, resp, []string{up.FileID})
		var got bytes.Buffer
		if _, err := in.c.Download(ctx(t, time.Minute), up.FileID, &got); err != nil || !bytes.Equal(got.Bytes(), content) {
			t.Fatalf("%s: download: %v (%d bytes)", in.name, err, got.Len())
		}
		list, err := in.c.List(ctx(t, time.Minute))
		if err != nil || !slices.ContainsFunc(list, func(f svc.StoredFile) bool { return f.ID == up.FileID && *f.Filename == "input.bin" }) {
			t.Fatalf("%s: GET /file: %v %+v", in.name, err, list)
		}
	}
	again, err := c.c.UploadBytes(ctx(t, time.Minute), "again.bin", content)
	if err != nil || !again.AlreadyExists {
		t.Fatalf("upload of the same bytes through another instance: %+v %v", again, err)
	}
	// Deleted through the third, for all: every instance says not_found
	// within the second a cached copy is trusted for.
	if err := c.c.Delete(ctx(t, time.Minute), up.FileID); err != nil {
		t.Fatal(err)
	}
	for _, in := range []*instance{a, b, c} {
		err := waitFor(30*time.Second, in.proc, func() error {
			_, err := in.c.Download(context.Background(), up.FileID, io.Discard)
			if svc.CodeOf(err) != svc.CodeNotFound {
				return fmt.Errorf("%s: download of a deleted file: %v", in.name, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		in.c.Forget(up.FileID) // so that Execute does not upload it again
		_, err = in.c.Run(ctx(t, time.Minute), svc.Single(sumTask(up.FileID)))
		if svc.CodeOf(err) != svc.CodeFileNotFound {
			t.Fatalf("%s: a request with a deleted file: %v", in.name, err)
		}
	}
}

func testKillDuringJudging(t *testing.T, cl *cluster, s3 *seaweedtest.Server) {
	// The tests of a problem, uploaded through nginx.
	const numTests = 8
	var ids []string
	sums := map[string]bool{}
	for i := range numTests {
		b := make([]byte, 1000+i*97_000)
		rand.NewChaCha8([32]byte{2, byte(i)}).Read(b)
		up, err := cl.c.UploadBytes(ctx(t, time.Minute), fmt.Sprintf("test%02d.in", i), b)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, up.FileID)
		sums[up.FileID] = true
	}
	submission := func() *svc.Request {
		var steps []svc.Step
		for _, id := range ids {
			steps = append(steps, svc.Single(sumTask(id)))
		}
		return &svc.Request{Steps: steps}
	}

	// A burst: judged submissions and new uploads from 6 clients; the
	// second instance is killed once a few have been answered.
	const (
		workers = 6
		rounds  = 5
	)
	victim := cl.instances[1]
	var (
		mu       sync.Mutex
		answered int
		failures []string
		uploaded []string
		killOnce sync.Once
		wg       sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				c := ctx(t, 3*time.Minute)
				resp, err := cl.c.Execute(c, submission())
				if err == nil {
					func() {
						defer func() {
							if p := recover(); p != nil {
								err = fmt.Errorf("%v", p)
							}
						}()
						for i, id := range ids {
							if out := resp.Results[i].Results[0].Stdout; !strings.HasPrefix(out, id+" ") {
								err = fmt.Errorf("task %d printed %q, want the sum %s", i, out, id)
							}
						}
					}()
				}
				b := make([]byte, 200_000+w*1000+r)
				rand.NewChaCha8([32]byte{3, byte(w), byte(r)}).Read(b)
				up, uerr := cl.c.UploadBytes(c, "", b)
				mu.Lock()
				answered++
				if err != nil {
					failures = append(failures, fmt.Sprintf("worker %d round %d: execute: %v", w, r, err))
				}
				if uerr != nil {
					failures = append(failures, fmt.Sprintf("worker %d round %d: upload: %v", w, r, uerr))
				} else {
					uploaded = append(uploaded, up.FileID)
				}
				n := answered
				mu.Unlock()
				if n == workers {
					killOnce.Do(func() {
						t.Logf("SIGKILL %s after %d answers", victim.name, n)
						victim.stop(syscall.SIGKILL, 0)
					})
				}
			}
		})
	}
	wg.Wait()
	if !victim.exited() {
		t.Fatal("the victim was not killed")
	}
	if len(failures) > 0 {
		t.Fatalf("%d of %d rounds failed:\n%s", len(failures), workers*rounds, strings.Join(failures, "\n"))
	}

	// No stored file is lost or damaged: each downloads through nginx
	// with its sum, and every object of the store hashes to its key.
	for _, id := range append(slices.Clone(ids), uploaded...) {
		h := sha256.New()
		if _, err := cl.c.Download(ctx(t, time.Minute), id, h); err != nil {
			t.Fatalf("download %s: %v", id, err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != id {
			t.Fatalf("file %s downloads with the sum %s", id, got)
		}
	}
	// A file's object holds its content, or refers to staged content
	// (an upload larger than one part; svc's filestore_s3.go).
	mc := s3.Client()
	n := 0
	for oi := range mc.ListObjects(context.Background(), s3.Bucket, minio.ListObjectsOptions{Prefix: fleetPrefix}) {
		if oi.Err != nil {
			t.Fatal(oi.Err)
		}
		if strings.HasSuffix(oi.Key, "/") {
			continue // the staged contents' directory
		}
		key := oi.Key
		st, err := mc.StatObject(context.Background(), s3.Bucket, key, minio.StatObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ref := st.UserMetadata["Svc-Content"]; ref != "" {
			key = fleetPrefix + ref
		}
		o, err := mc.GetObject(context.Background(), s3.Bucket, key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		_, err = io.Copy(h, o)
		o.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := fleetPrefix + hex.EncodeToString(h.Sum(nil)); got != oi.Key {
			t.Errorf("object %s holds content (%s) whose sum is %s", oi.Key, key, got)
		}
		n++
	}
	if n < len(ids)+len(uploaded) {
		t.Errorf("the store holds %d objects, want at least %d", n, len(ids)+len(uploaded))
	}
	t.Logf("%d rounds answered, %d attempts, %d objects verified", answered, len(cl.rec.since(0)), n)
}
