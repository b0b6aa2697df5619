package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBench runs svc bench in a tiny mode on the cheap figures and checks
// that the table has their rows, with positive times and ratios.
func TestBench(t *testing.T) {
	requireRoot(t)
	var out, errs bytes.Buffer
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	args := []string{"--runs", "3", "--warmup", "1", "--only", "^(library|http|http-floor|width)$",
		"--uid-base", testUIDBase(), "--cpuprofile", prof}
	if err := benchCmd(args, &out, &errs); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errs.String())
	}
	t.Log("\n" + out.String())
	// A CPU profile is gzip-compressed protobuf.
	if b, err := os.ReadFile(prof); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("--cpuprofile %s: %d bytes, %v; want a gzip-compressed profile", prof, len(b), err)
	}

	lines := strings.Split(out.String(), "\n")
	h := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "row ") })
	if h < 0 {
		t.Fatalf("no header line")
	}
	header := lines[h]
	// cell returns the cell of column name in line: the columns start
	// where their names start in the header.
	cell := func(line, name string) string {
		i := strings.Index(header, "  "+name+"  ") + 2
		if i < 2 {
			t.Fatalf("no column %q in %q", name, header)
		}
		if i >= len(line) {
			return ""
		}
		return strings.Fields(line[i:] + " ")[0]
	}
	for _, name := range []string{"bare, first", "bare, last", "bare", "library /bin/true", "http /bin/true",
		"http floor: os/exec handler", "parallel x1, per task", "parallel x4, per task", "parallel x8, per task"} {
		i := slices.IndexFunc(lines[h+1:], func(l string) bool { return strings.HasPrefix(l, name+"  ") })
		if i < 0 {
			t.Errorf("no row %q", name)
			continue
		}
		line := lines[h+1+i]
		if n, err := strconv.Atoi(cell(line, "n")); err != nil || n < 3 {
			t.Errorf("row %q: n %q", name, cell(line, "n"))
		}
		for _, col := range []string{"median", "p99"} {
			if ms, err := strconv.ParseFloat(cell(line, col), 64); err != nil || ms <= 0 {
				t.Errorf("row %q: %s %q", name, col, cell(line, col))
			}
		}
		if strings.HasPrefix(name, "bare") {
			continue
		}
		if r, err := strconv.ParseFloat(strings.TrimSuffix(cell(line, "ratio"), "x"), 64); err != nil || r <= 0 {
			t.Errorf("row %q: ratio %q", name, cell(line, "ratio"))
		}
	}
	if strings.Contains(out.String(), "gcc") {
		t.Errorf("--only ran more figures than asked")
	}
}

// TestBenchRemoteJudged runs the figures that need another process (the
// load client) and g++: their rows are there, with figures.
func TestBenchRemoteJudged(t *testing.T) {
	requireRoot(t)
	// The load client is this binary run as svc (see TestMain).
	t.Setenv("SVC_TEST_MAIN", "1")
	var out, errs bytes.Buffer
	args := []string{"--runs", "3", "--warmup", "1", "--duration", "300ms", "--only", "^(remote|judged)$",
		"--uid-base", testUIDBase()}
	if err := benchCmd(args, &out, &errs); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errs.String())
	}
	t.Log("\n" + out.String())
	rows := map[string]bool{}
	for line := range strings.Lines(out.String()) {
		name, _, _ := strings.Cut(line, "  ")
		rows[name] = strings.Contains(line, " ms")
	}
	for _, name := range []string{
		"bare, 1 goroutines, another process", "http, 1 clients, another process",
		"bare, 2 goroutines, another process", "http, 2 clients, another process",
		"bare, 8 goroutines, another process", "http, 8 clients, another process",
		"judged: 48 tests, host", "judged: compile replayed + 48 tests, sandbox",
	} {
		if !rows[name] {
			t.Errorf("no row %q with figures", name)
		}
	}
}

// TestMeasurePair: the two operations alternate which goes first, each
// is sampled n times after its warm-up runs, and a failed check ends the
// row with its error.
func TestMeasurePair(t *testing.T) {
	var order []string
	op := func(name string) func() (string, error) {
		return func() (string, error) { order = append(order, name); return name, nil }
	}
	ok := func(string) error { return nil }
	b := &bench{ctx: context.Background(), f: benchFlags{warmup: 1}}
	dsA, dsB, _, _, err := measurePair(b, 3, op("a"), ok, op("b"), ok)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(order, ""), "ab"+"abbaab"; got != want {
		t.Errorf("order %q, want %q (warm-up, then a first and b first in turn)", got, want)
	}
	if len(dsA) != 3 || len(dsB) != 3 {
		t.Errorf("%d and %d samples, want 3 each", len(dsA), len(dsB))
	}
	bad := func(string) error { return errors.New("wrong output") }
	if _, _, _, _, err := measurePair(b, 3, op("a"), ok, op("b"), bad); err == nil || !strings.Contains(err.Error(), "wrong output") {
		t.Errorf("a failed check: %v", err)
	}
}

func TestSummarize(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Millisecond)
		}
		return ds
	}
	many := ms()
	for i := 100; i >= 1; i-- {
		many = append(many, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		ds          []time.Duration
		median, p99 time.Duration
	}{
		{ms(5), 5 * time.Millisecond, 5 * time.Millisecond},
		{ms(3, 1, 2), 2 * time.Millisecond, 3 * time.Millisecond},
		{ms(4, 1, 3, 2), 2500 * time.Microsecond, 4 * time.Millisecond},
		{many, 50500 * time.Microsecond, 99 * time.Millisecond},
	} {
		if median, p99 := summarize(slices.Clone(c.ds)); median != c.median || p99 != c.p99 {
			t.Errorf("summarize(%v) = %v, %v; want %v, %v", c.ds, median, p99, c.median, c.p99)
		}
	}
}
