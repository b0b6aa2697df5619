package conformance_test

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/svc-sandbox/svc"
)

// normalize replaces every match of the case's normalize: regexps by <N>.
func normalize(s string, res []*regexp.Regexp) string {
	for _, re := range res {
		s = re.ReplaceAllLiteralString(s, "<N>")
	}
	return s
}

// fromSandbox is the result of a sandbox task as the suite compares it.
func fromSandbox(r svc.Result) result {
	return result{Outcome: r.Outcome, ExitCode: r.ExitCode, Signal: r.Signal,
		Stdout: r.Stdout, Stderr: r.Stderr, Truncated: r.StdoutTruncated || r.StderrTruncated}
}

// differences lists how the sandbox's result differs from the host's,
// outputs normalized by res; none means identical.
func differences(host, box result, res []*regexp.Regexp) []string {
	var d []string
	if host.Outcome != box.Outcome || host.ExitCode != box.ExitCode || host.Signal != box.Signal {
		d = append(d, fmt.Sprintf("status: host %v, sandbox %v", host, box))
	}
	if host.Truncated || box.Truncated {
		d = append(d, fmt.Sprintf("output cut at the output limit (host %v, sandbox %v): keep a case's output small", host.Truncated, box.Truncated))
	}
	for _, s := range []struct{ name, h, b string }{
		{"stdout", host.Stdout, box.Stdout},
		{"stderr", host.Stderr, box.Stderr},
	} {
		if h, b := normalize(s.h, res), normalize(s.b, res); h != b {
			d = append(d, s.name+": "+textDiff(h, b))
		}
	}
	return d
}

// textDiff describes two different texts: whole when short, else the
// first line that differs.
func textDiff(h, b string) string {
	const short = 600
	if len(h) <= short && len(b) <= short {
		return fmt.Sprintf("\n  host:    %q\n  sandbox: %q", h, b)
	}
	hl, bl := strings.SplitAfter(h, "\n"), strings.SplitAfter(b, "\n")
	i := 0
	for i < len(hl) && i < len(bl) && hl[i] == bl[i] {
		i++
	}
	line := func(ls []string) string {
		if i >= len(ls) {
			return "(end)"
		}
		return fmt.Sprintf("%q", clip(ls[i], 200))
	}
	return fmt.Sprintf("%d vs %d bytes, %d vs %d lines; first difference at line %d:\n  host:    %s\n  sandbox: %s",
		len(h), len(b), len(hl), len(bl), i+1, line(hl), line(bl))
}

// clip cuts s to n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// unexpectedDenials returns the refused calls of denied that ok does not
// name, sorted, with their counts.
func unexpectedDenials(denied map[string]int64, ok map[string]string) []string {
	var out []string
	for _, call := range slices.Sorted(maps.Keys(denied)) {
		if _, fine := ok[call]; !fine {
			out = append(out, fmt.Sprintf("%s x%d", call, denied[call]))
		}
	}
	return out
}
