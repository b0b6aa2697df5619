package scaleout

// Figures of the file store through svc serve (issue 34): a separate
// process, this benchmark, uploads and downloads 64 MiB files over HTTP,
// against the local store and against the S3 backend (SeaweedFS on
// loopback), the latter next to the same client's PUT and GET straight
// to the same SeaweedFS; and a judged submission whose 48 inputs are stored files,
// with its instance's cache warm. The server's peak RSS is reported
// (server-hwm-MiB) to show it flat whatever the file size.
//
//	go test -run '^$' -bench FileStore -benchtime 5x ./scaleout

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/client"
	"github.com/svc-sandbox/svc/seaweedtest"
)

const benchFileSize = 64 << 20

// benchServer is one svc serve process for a benchmark.
type benchServer struct {
	*instance
	url  string
	key  string
	http *http.Client // with large buffers, for the transfers
}

// startBenchServer builds svc and starts svc serve with env added to
// the benchmarks' settings.
func startBenchServer(b *testing.B, env ...string) *benchServer {
	b.Helper()
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	key := randomHex(16)
	in := startInstance(b, buildSvc(b, moduleRoot(b)), "svc", append([]string{"API_KEYS=" + key,
		"UPLOAD_FILE_LIMIT_BYTES=128MiB", "WORKSPACE_SIZE_BYTES=512MiB", "MAX_CONCURRENCY=8",
		"SANDBOX_UID_BASE=" + strconv.Itoa(uidBase(0))}, env...), key)
	s := &benchServer{instance: in, url: "http://" + in.addr, key: key}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.WriteBufferSize, tr.ReadBufferSize = 256<<10, 256<<10
	s.http = &http.Client{Transport: tr}
	var err error
	s.c, err = client.New(client.Config{URL: s.url, Key: key, HTTPClient: s.http})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// hwm is the server's peak RSS in MiB.
func (s *benchServer) hwm(b *testing.B) float64 {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(st)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// cpuOf is the CPU time, user and system, process pid has used.
func cpuOf(b *testing.B, pid int) time.Duration {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// selfCPU is the CPU time of this process: the client's.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuMeter sums the CPU time of the processes of a benchmark over the
// operations it is told of: this client, svc serve, the S3 server (a pid
// of 0 is left out).
type cpuMeter struct {
	b            *testing.B
	svc, s3      int
	c0, a0, w0   time.Duration // at begin
	client, a, w time.Duration // summed
	n            int
	prefix       string // of the metrics' names
}

func newCPUMeter(b *testing.B, svcPid, s3Pid int) *cpuMeter {
	return &cpuMeter{b: b, svc: svcPid, s3: s3Pid}
}

func (m *cpuMeter) of(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	return cpuOf(m.b, pid)
}

// begin and end bracket one operation.
func (m *cpuMeter) begin() { m.c0, m.a0, m.w0 = selfCPU(), m.of(m.svc), m.of(m.s3) }

func (m *cpuMeter) end() {
	m.client += selfCPU() - m.c0
	m.a += m.of(m.svc) - m.a0
	m.w += m.of(m.s3) - m.w0
	m.n++
}

// report reports the CPU time per operation of each process.
func (m *cpuMeter) report() {
	if m.n == 0 {
		return
	}
	per := float64(m.n) * float64(time.Millisecond)
	m.b.ReportMetric(float64(m.client)/per, m.prefix+"client-cpu-ms/op")
	if m.svc != 0 {
		m.b.ReportMetric(float64(m.a)/per, m.prefix+"svc-cpu-ms/op")
	}
	if m.s3 != 0 {
		m.b.ReportMetric(float64(m.w)/per, m.prefix+"s3-cpu-ms/op")
	}
}

// upload posts content as a streamed multipart body, as curl -F does.
func (s *benchServer) upload(b *testing.B, content []byte) string {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, _ := mw.CreateFormFile("file", "big.bin")
		part.Write(content)
		pw.CloseWithError(mw.Close())
	}()
	req, _ := http.NewRequest("POST", s.url+"/file", pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+s.key)
	resp, err := s.http.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var up client.Uploaded
	if resp.StatusCode != 201 && resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&up) != nil {
		body, _ := io.ReadAll(resp.Body)
		b.Fatalf("upload: HTTP %d %s", resp.StatusCode, body)
	}
	return up.FileID
}

func (s *benchServer) download(b *testing.B, id string) {
	req, _ := http.NewRequest("GET", s.url+"/file/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+s.key)
	resp, err := s.http.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || n != benchFileSize {
		b.Fatalf("download: HTTP %d, %d bytes, %v", resp.StatusCode, n, err)
	}
}

func benchContent() []byte {
	content := make([]byte, benchFileSize)
	rand.NewChaCha8([32]byte{9}).Read(content)
	return content
}

// backendEnv starts what a backend needs and returns svc serve's env.
func backendEnv(b *testing.B, backend string) ([]string, *seaweedtest.Server) {
	if backend == "dir" {
		return nil, nil
	}
	s3 := seaweedtest.Start(b)
	return append(s3.Env(), "FILESTORE_URL="+s3.URL("bench/")), s3
}

// BenchmarkFileStoreHTTP uploads and downloads 64 MiB through svc serve.
// With the S3 backend each upload (download) alternates with the same
// client's PUT (GET) of 64 MiB straight to the same SeaweedFS, untimed,
// so that both see the same machine: direct-median-ms is the median of
// those, svc-median-ms svc's, and direct-ratio the first over the
// second (the target: >= 0.8). download is through the instance that
// uploaded the file (its cache holds it); download-other through
// another one, which fetches it from the store and hashes it before it
// serves it.
func BenchmarkFileStoreHTTP(b *testing.B) {
	content := benchContent()
	for _, backend := range []string{"dir", "s3"} {
		b.Run(backend, func(b *testing.B) {
			env, s3 := backendEnv(b, backend)
			row := transferRow{}
			if s3 != nil {
				row.s3Pid = s3.Pid()
				row.direct = &directS3{s3: s3, mc: s3.Client()}
			}
			s := startBenchServer(b, env...)
			row.srv = s
			s.upload(b, content[:1<<20]) // warm
			// New content each time: a new file, not already_exists.
			fresh := func(i int) { copy(content, fmt.Sprintf("%s-%d-%d-", backend, time.Now().UnixNano(), i)) }
			b.Run("upload", func(b *testing.B) {
				row.run(b, fresh, func(int) { s.upload(b, content) },
					func(i int) time.Duration { return row.direct.put(b, content, i) })
			})
			id := s.upload(b, content)
			if row.direct == nil {
				b.Run("download", func(b *testing.B) { row.run(b, nil, func(int) { s.download(b, id) }, nil) })
				return
			}
			row.direct.meter(b)
			row.direct.put(b, content, -1)
			getDirect := func(int) time.Duration { return row.direct.get(b, -1) }
			b.Run("download", func(b *testing.B) { row.run(b, nil, func(int) { s.download(b, id) }, getDirect) })
			// Through another instance, each file uploaded through the
			// first: fetched from the store, hashed, then served.
			other := row
			other.srv = startBenchServer(b, append(slices.Clone(env), "SANDBOX_UID_BASE="+strconv.Itoa(uidBase(1)))...)
			b.Run("download-other", func(b *testing.B) {
				other.run(b, func(i int) { fresh(i); id = s.upload(b, content) },
					func(int) { other.srv.download(b, id) }, getDirect)
			})
		})
	}
}

// transferRow is a row of BenchmarkFileStoreHTTP: transfers through one
// instance, each next to the client's own transfer straight to the S3
// server when there is one.
type transferRow struct {
	srv    *benchServer
	s3Pid  int
	direct *directS3 // nil: no S3 server
}

// run runs b's loop: prepare (untimed, if any), then op, timed and
// metered, then the direct transfer (untimed, with an S3 server); and
// reports the medians, their ratio, each process's CPU time and the
// instance's peak RSS.
func (r transferRow) run(b *testing.B, prepare, op func(i int), direct func(i int) time.Duration) {
	b.SetBytes(benchFileSize)
	cpu := newCPUMeter(b, r.srv.cmd.Process.Pid, r.s3Pid)
	r.direct.meter(b)
	var ds, directs []time.Duration
	for i := 0; b.Loop(); i++ {
		if prepare != nil {
			b.StopTimer()
			prepare(i)
			b.StartTimer()
		}
		t0 := time.Now()
		cpu.begin()
		op(i)
		cpu.end()
		ds = append(ds, time.Since(t0))
		if r.direct != nil {
			b.StopTimer()
			directs = append(directs, direct(i))
			b.StartTimer()
		}
	}
	cpu.report()
	r.direct.report(b, ds, directs)
	b.ReportMetric(r.srv.hwm(b), "server-hwm-MiB")
}

// directS3 is the client's own PUT and GET of 64 MiB straight to the S3
// server: one PUT of one part, no payload signing, as svc does. Its CPU
// time is reported as direct-*-cpu-ms/op.
type directS3 struct {
	s3  *seaweedtest.Server
	mc  *minio.Client
	cpu *cpuMeter
}

func (d *directS3) put(b *testing.B, content []byte, i int) time.Duration {
	t0 := time.Now()
	d.cpu.begin()
	defer d.cpu.end()
	if _, err := d.mc.PutObject(context.Background(), d.s3.Bucket, fmt.Sprintf("direct/%d", i), bytes.NewReader(content), benchFileSize,
		minio.PutObjectOptions{PartSize: 64 << 20, DisableContentSha256: true}); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}

func (d *directS3) get(b *testing.B, i int) time.Duration {
	t0 := time.Now()
	d.cpu.begin()
	defer d.cpu.end()
	o, err := d.mc.GetObject(context.Background(), d.s3.Bucket, fmt.Sprintf("direct/%d", i), minio.GetObjectOptions{})
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, o)
	o.Close()
	if err != nil || n != benchFileSize {
		b.Fatal(n, err)
	}
	return time.Since(t0)
}

// meter starts counting the CPU time of b's direct transfers.
func (d *directS3) meter(b *testing.B) {
	if d != nil {
		d.cpu = newCPUMeter(b, 0, d.s3.Pid())
		d.cpu.prefix = "direct-"
	}
}

// report reports the medians of svc's and the direct transfers, and
// their ratio; nothing without an S3 server.
func (d *directS3) report(b *testing.B, ds, directs []time.Duration) {
	if d == nil || len(ds) == 0 {
		return
	}
	d.cpu.report()
	mine, theirs := median(ds), median(directs)
	b.ReportMetric(float64(mine)/float64(time.Millisecond), "svc-median-ms")
	b.ReportMetric(float64(theirs)/float64(time.Millisecond), "direct-median-ms")
	b.ReportMetric(float64(theirs)/float64(mine), "direct-ratio")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkFileStoreJudged48 is a judged submission of 48 tests whose
// inputs (64 KiB each) are stored files: one task per test reads its
// input and prints its sum, eight at a time. The cache of the instance is warm (the
// submission ran once before the timing).
func BenchmarkFileStoreJudged48(b *testing.B) {
	for _, backend := range []string{"dir", "s3"} {
		b.Run(backend, func(b *testing.B) {
			env, _ := backendEnv(b, backend)
			s := startBenchServer(b, env...)
			ctx := context.Background()
			var tasks []svc.Task
			for i := range 48 {
				in := make([]byte, 64<<10)
				rand.NewChaCha8([32]byte{7, byte(i)}).Read(in)
				up, err := s.c.UploadBytes(ctx, fmt.Sprintf("test%02d.in", i), in)
				if err != nil {
					b.Fatal(err)
				}
				tasks = append(tasks, sumTask(up.FileID))
			}
			// Six steps of eight tests run in parallel, as a judge does.
			var steps []svc.Step
			for i := 0; i < 48; i += 8 {
				steps = append(steps, svc.Parallel(tasks[i:i+8]...))
			}
			req := &svc.Request{Steps: steps} // Cache false: executed, not replayed
			run := func() {
				resp, err := s.c.Execute(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				if r := resp.Results[5].Results[7]; r.Outcome != svc.OutcomeExited || r.ExitCode != 0 {
					b.Fatalf("last test: %s %q", r.Outcome, r.Stderr)
				}
			}
			run() // warm
			for b.Loop() {
				run()
			}
		})
	}
}
