package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svc-sandbox/svc/internal/pingpong"
)

// pairCells makes two cells, each in a shell of its own, closed at the
// test's end.
func pairCells(t testing.TB) (a, b *Cell) { return pairCellsOf(t, nil) }

// pairCellsOf makes two cells of task (nil: each its own shellTask), each
// in a shell of its own, closed at the test's end.
func pairCellsOf(t testing.TB, task *ShellTask) (a, b *Cell) {
	t.Helper()
	cells := make([]*Cell, 2)
	for i := range cells {
		st := task
		if st == nil {
			st = shellTask(t)
		}
		c, err := testShell(t).Cell(context.Background(), st)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cells[i] = c
	}
	return cells[0], cells[1]
}

// runPair runs ta in a and tb in b at once and returns their results,
// failing the test if either has not ended within a minute: a step of
// piped tasks ends by the wall limits of its tasks at the latest.
func runPair(t *testing.T, a, b *Cell, ta, tb *Task) (ra, rb *Result) {
	t.Helper()
	var (
		wg         sync.WaitGroup
		errA, errB error
	)
	wg.Go(func() { ra, errA = a.Run(context.Background(), ta) })
	wg.Go(func() { rb, errB = b.Run(context.Background(), tb) })
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the piped tasks did not end")
	}
	if errA != nil || errB != nil {
		t.Fatalf("run: %v, %v", errA, errB)
	}
	return ra, rb
}

func shTask(script string) *Task { return testTask("sh", "-c", script) }

// exitedWith checks that r exited with status code.
func exitedWith(t *testing.T, name string, r *Result, code int) {
	t.Helper()
	if !r.Report.Exited || !r.Report.Status.Exited() || r.Report.Status.ExitStatus() != code {
		t.Errorf("%s: report %+v (killed %v), want exit %d; stderr %.300q", name, r.Report, r.Killed(), code, r.Stderr)
	}
}

// killedBy checks that a signal the task did not send itself ended r.
func killedBy(t *testing.T, name string, r *Result, sig syscall.Signal) {
	t.Helper()
	if !r.Report.Exited || !r.Report.Status.Signaled() || r.Report.Status.Signal() != sig {
		t.Errorf("%s: report %+v (killed %v), want signal %d; stderr %.300q", name, r.Report, r.Killed(), sig, r.Stderr)
	}
}

// TestPipePingPong: two tasks feed each other, line by line, in both
// directions; each transcript is exactly what its task wrote, and the
// consumer of a task that has ended reads end-of-file.
func TestPipePingPong(t *testing.T) {
	requireRoot(t)
	a, b := pairCells(t)
	if err := a.PipeTo(b); err != nil {
		t.Fatal(err)
	}
	if err := b.PipeTo(a); err != nil {
		t.Fatal(err)
	}
	const n = 300
	ping := shTask(`i=0; while [ $i -lt ` + strconv.Itoa(n) + ` ]; do echo $i; read x || exit 2; [ "$x" = "$i" ] || exit 3; i=$((i+1)); done`)
	// cat echoes each line back and ends at the end-of-file that
	// follows the pinger's exit.
	ra, rb := runPair(t, a, b, ping, testTask("cat"))
	exitedWith(t, "ping", ra, 0)
	exitedWith(t, "cat", rb, 0)
	var want strings.Builder
	for i := range n {
		fmt.Fprintf(&want, "%d\n", i)
	}
	for name, r := range map[string]*Result{"ping": ra, "cat": rb} {
		if string(r.Stdout) != want.String() || r.StdoutTruncated || r.OutputExceeded {
			t.Errorf("%s: transcript %d bytes (truncated %v, output exceeded %v), want %d", name, len(r.Stdout), r.StdoutTruncated, r.OutputExceeded, want.Len())
		}
	}
}

// TestPipeTranscriptLimit: a producer writes past its output limit and
// past the budget; the transcript is cut exactly at each, while every
// byte reaches the consumer and the producer exits normally.
func TestPipeTranscriptLimit(t *testing.T) {
	requireRoot(t)
	const total = 3_000_000
	for _, c := range []struct {
		name          string
		limit, budget int64
		want          int
	}{
		{"output limit", 1 << 20, 0, 1 << 20},
		{"budget", 1 << 20, 5000, 5000},
		{"within", 4 << 20, 0, total},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := pairCells(t)
			if err := a.PipeTo(b); err != nil {
				t.Fatal(err)
			}
			// Bytes that differ, so that a byte lost or moved shows.
			src := shTask("seq 1 1000000 | head -c " + strconv.Itoa(total))
			src.OutputLimit = c.limit
			if c.budget > 0 {
				src.Budget = NewBudget(c.budget)
			}
			ra, rb := runPair(t, a, b, src, shTask("wc -c; exit 0"))
			exitedWith(t, "producer", ra, 0)
			exitedWith(t, "wc", rb, 0)
			if ra.OutputExceeded {
				t.Error("a piped stream ended its task")
			}
			full, err := exec.Command("sh", "-c", "seq 1 1000000 | head -c "+strconv.Itoa(total)).Output()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ra.Stdout, full[:c.want]) || ra.StdoutTruncated != (c.want < total) {
				t.Errorf("transcript %d bytes (a prefix: %v), truncated %v; want %d", len(ra.Stdout), bytes.HasPrefix(full, ra.Stdout), ra.StdoutTruncated, c.want)
			}
			if got := strings.TrimSpace(string(rb.Stdout)); got != strconv.Itoa(total) {
				t.Errorf("the consumer read %s bytes, want %d", got, total)
			}
		})
	}
}

// TestPipeEnds: whichever side stops, both tasks end with the outcome
// their own conduct earns, and the pair ends.
func TestPipeEnds(t *testing.T) {
	requireRoot(t)
	t.Run("consumer ends early", func(t *testing.T) {
		a, b := pairCells(t)
		a.PipeTo(b)
		ra, rb := runPair(t, a, b, testTask("yes"), shTask("head -n 2"))
		killedBy(t, "yes", ra, syscall.SIGPIPE)
		exitedWith(t, "head", rb, 0)
		if string(rb.Stdout) != "y\ny\n" || !bytes.HasPrefix(ra.Stdout, []byte("y\ny\n")) {
			t.Errorf("head read %q; yes's transcript starts %.10q", rb.Stdout, ra.Stdout)
		}
	})
	t.Run("consumer never reads, exits", func(t *testing.T) {
		a, b := pairCells(t)
		a.PipeTo(b)
		ra, rb := runPair(t, a, b, testTask("yes"), testTask("sleep", "0.5"))
		killedBy(t, "yes", ra, syscall.SIGPIPE)
		exitedWith(t, "sleep", rb, 0)
		// Held up by the consumer: about two pipes' worth and a read.
		if n := len(ra.Stdout); n < relayBuf || n > 4*relayBuf {
			t.Errorf("yes wrote %d bytes to a consumer that never read", n)
		}
	})
	t.Run("consumer never reads, never ends", func(t *testing.T) {
		a, b := pairCells(t)
		a.PipeTo(b)
		sleeper := testTask("sleep", "100")
		sleeper.WallTimeout = time.Second
		ra, rb := runPair(t, a, b, testTask("yes"), sleeper)
		killedBy(t, "yes", ra, syscall.SIGPIPE)
		if !rb.TimedOut {
			t.Errorf("sleep: %+v, want timed out", rb.Report)
		}
	})
	t.Run("producer never writes", func(t *testing.T) {
		a, b := pairCells(t)
		a.PipeTo(b)
		ra, rb := runPair(t, a, b, testTask("sleep", "0.3"), shTask("cat; echo eof"))
		exitedWith(t, "sleep", ra, 0)
		exitedWith(t, "cat", rb, 0)
		if string(rb.Stdout) != "eof\n" || len(ra.Stdout) != 0 {
			t.Errorf("cat wrote %q, sleep %q", rb.Stdout, ra.Stdout)
		}
	})
	t.Run("producer ends first, consumer reads later", func(t *testing.T) {
		a, b := pairCells(t)
		a.PipeTo(b)
		ra, rb := runPair(t, a, b, shTask("echo hello"), shTask("sleep 0.5; cat"))
		exitedWith(t, "echo", ra, 0)
		exitedWith(t, "cat", rb, 0)
		if string(rb.Stdout) != "hello\n" || string(ra.Stdout) != "hello\n" {
			t.Errorf("cat read %q of %q", rb.Stdout, ra.Stdout)
		}
		if ra.WallTime > 400*time.Millisecond {
			t.Errorf("the producer's wall time %v counts the consumer's wait", ra.WallTime)
		}
	})
	t.Run("producer floods, consumer closes its stdin", func(t *testing.T) {
		a, b := pairCells(t)
		a.PipeTo(b)
		ra, rb := runPair(t, a, b, testTask("yes"), shTask("head -c 10 >/dev/null; exec 0<&-; sleep 0.3; echo closed"))
		killedBy(t, "yes", ra, syscall.SIGPIPE)
		exitedWith(t, "consumer", rb, 0)
		if string(rb.Stdout) != "closed\n" {
			t.Errorf("consumer wrote %q", rb.Stdout)
		}
	})
	t.Run("consumer never runs", func(t *testing.T) {
		a, _ := pairCells(t)
		if err := a.PipeTo(nil); err != nil {
			t.Fatal(err)
		}
		r, err := a.Run(context.Background(), shTask("echo lost; echo unreached >&2"))
		if err != nil {
			t.Fatal(err)
		}
		killedBy(t, "echo", r, syscall.SIGPIPE)
		if len(r.Stdout) != 0 || len(r.Stderr) != 0 {
			t.Errorf("stdout %q, stderr %q", r.Stdout, r.Stderr)
		}
	})
	t.Run("consumer cell closed unused", func(t *testing.T) {
		a, _ := pairCells(t)
		b, err := testShell(t).Cell(context.Background(), shellTask(t))
		if err != nil {
			t.Fatal(err)
		}
		a.PipeTo(b)
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := a.Run(context.Background(), shTask("sleep 0.2; echo lost"))
		if err != nil {
			t.Fatal(err)
		}
		killedBy(t, "echo", r, syscall.SIGPIPE)
	})
}

// TestPipeMisuse: a cell feeds one cell, is fed once, and a fed task
// takes no stdin of its own.
func TestPipeMisuse(t *testing.T) {
	requireRoot(t)
	a, b := pairCells(t)
	if err := a.PipeTo(b); err != nil {
		t.Fatal(err)
	}
	if a.PipeTo(b) == nil {
		t.Error("a cell fed a second cell")
	}
	if b.PipeTo(b) == nil {
		t.Error("a fed cell fed itself")
	}
	task := testTask("cat")
	task.Stdin = "x"
	if _, err := b.Run(context.Background(), task); err == nil {
		t.Error("a fed task ran with stdin of its own")
	}
}

// buildPing compiles pingpong.Source into dir as "ping".
func buildPing(t testing.TB, dir string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "ping.c"), []byte(pingpong.Source), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "ping")
	if out, err := exec.Command("gcc", "-O2", "-o", bin, filepath.Join(dir, "ping.c")).CombinedOutput(); err != nil {
		t.Skipf("gcc: %v: %s", err, out)
	}
	return bin
}

// BenchmarkPipePingPong is the round trip of one line between two tasks
// that feed each other, the pinger (pingpong.Source) and cat echoing, through the
// relays. BenchmarkHostPingPong is its baseline: the same two programs
// joined by two plain pipes on the host. An op is one run of 10000 round
// trips; ns/round-trip is the pinger's own clock.
func BenchmarkPipePingPong(b *testing.B) {
	requireRoot(b)
	task := shellTask(b)
	buildPing(b, task.Trees[0])
	sa, sc := testShell(b), testShell(b)
	var sum time.Duration
	for b.Loop() {
		b.StopTimer()
		a, c := cellPair(b, sa, sc, task)
		a.PipeTo(c)
		c.PipeTo(a)
		b.StartTimer()
		sum += playPing(b, a, c, testTask("/svc/ping", "10000"), testTask("cat"))
	}
	b.ReportMetric(float64(sum.Nanoseconds())/float64(b.N), "ns/round-trip")
}

// cellPair starts a cell for task in each of two shells.
func cellPair(b *testing.B, sa, sc *Shell, task *ShellTask) (a, c *Cell) {
	b.Helper()
	var err error
	if a, err = sa.Cell(context.Background(), task); err != nil {
		b.Fatal(err)
	}
	if c, err = sc.Cell(context.Background(), task); err != nil {
		b.Fatal(err)
	}
	return a, c
}

// playPing runs the pinger in a and cat in c at once, closes both cells
// and returns the pinger's average round trip.
func playPing(b *testing.B, a, c *Cell, ping, cat *Task) time.Duration {
	b.Helper()
	var (
		wg     sync.WaitGroup
		rc     *Result
		errCat error
	)
	wg.Go(func() { rc, errCat = c.Run(context.Background(), cat) })
	rp, err := a.Run(context.Background(), ping)
	wg.Wait()
	if err != nil || errCat != nil || rp.Report.Status.ExitStatus() != 0 || rc.Report.Status.ExitStatus() != 0 {
		b.Fatalf("ping: %v, %+v, %q; cat: %v", err, rp.Report, rp.Stderr, errCat)
	}
	d := roundTrip(b, rp.Stderr)
	if err := errors.Join(a.Close(), c.Close()); err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkFIFOPingPong is BenchmarkPipePingPong with the two tasks
// joined by two FIFOs of their shared workspace instead of the relays:
// the same sandboxes, no hop through the service. What it adds to
// BenchmarkHostPingPong is the sandboxes' (each task in its own
// session, so its own scheduler autogroup); what BenchmarkPipePingPong
// adds to it, the relays'.
func BenchmarkFIFOPingPong(b *testing.B) {
	requireRoot(b)
	task := shellTask(b)
	buildPing(b, task.Trees[0])
	for _, name := range []string{"up", "down"} {
		p := filepath.Join(task.Trees[0], name)
		if err := syscall.Mkfifo(p, 0o666); err != nil {
			b.Fatal(err)
		}
		os.Chown(p, 1_500_001, 1_500_001)
	}
	sa, sc := testShell(b), testShell(b)
	var sum time.Duration
	for b.Loop() {
		b.StopTimer()
		a, c := cellPair(b, sa, sc, task)
		b.StartTimer()
		sum += playPing(b, a, c, shTask("exec /svc/ping 10000 >up <down"), shTask("exec cat <up >down"))
	}
	b.ReportMetric(float64(sum.Nanoseconds())/float64(b.N), "ns/round-trip")
}

// BenchmarkHostPingPong is BenchmarkPipePingPong's baseline: the pinger
// and cat on the host, joined by two pipes.
func BenchmarkHostPingPong(b *testing.B) {
	bin := buildPing(b, b.TempDir())
	var sum time.Duration
	for b.Loop() {
		ping := exec.Command(bin, "10000")
		cat := exec.Command("cat")
		var err error
		if cat.Stdin, err = ping.StdoutPipe(); err != nil {
			b.Fatal(err)
		}
		if ping.Stdin, err = cat.StdoutPipe(); err != nil {
			b.Fatal(err)
		}
		var stderr bytes.Buffer
		ping.Stderr = &stderr
		if err := cat.Start(); err != nil {
			b.Fatal(err)
		}
		if err := ping.Run(); err != nil {
			b.Fatal(err)
		}
		if err := cat.Wait(); err != nil {
			b.Fatal(err)
		}
		sum += roundTrip(b, stderr.Bytes())
	}
	b.ReportMetric(float64(sum.Nanoseconds())/float64(b.N), "ns/round-trip")
}

// roundTrip reads the pinger's figure.
func roundTrip(t testing.TB, stderr []byte) time.Duration {
	ns, err := strconv.ParseInt(strings.TrimSpace(string(stderr)), 10, 64)
	if err != nil {
		t.Fatalf("the pinger wrote %q", stderr)
	}
	return time.Duration(ns)
}
