package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Version is the cgroup hierarchy version: 1 or 2.
type Version int

// The hierarchy versions.
const (
	V1 Version = 1
	V2 Version = 2
)

// ErrNotSupported is returned for an operation the hierarchy cannot do, such
// as [Group.OpenFD] on v1.
var ErrNotSupported = errors.New("cgroup: not supported")

// ParseFlatKeyed parses a flat keyed cgroup file: one "key value" pair a
// line, value a decimal integer. cpu.stat, memory.events(.local),
// pids.events and memory.oom_control have this shape. Blank lines are
// skipped; a malformed line is an error naming its number.
func ParseFlatKeyed(r io.Reader) (map[string]int64, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("cgroup: parse: %w", err)
	}
	return parseFlatKeyed(string(b))
}

// parseFlatKeyed is ParseFlatKeyed of a file's text, already read: the
// statistics of every task go through it, so it splits s in place.
func parseFlatKeyed(s string) (map[string]int64, error) {
	m := make(map[string]int64)
	n := 0
	for line := range strings.Lines(s) {
		n++
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("cgroup: parse line %d %q: no value", n, line)
		}
		i, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("cgroup: parse line %d %q: %w", n, line, err)
		}
		m[k] = i
	}
	return m, nil
}

// ParseProcCgroup parses /proc/<pid>/cgroup. v1 maps each v1 controller to
// the process's path in that controller's hierarchy: a line
// "2:cpu,cpuacct:/a" yields both "cpu" and "cpuacct", and a named hierarchy
// keeps its "name=" prefix ("name=systemd"). v2 is the path of the unified
// hierarchy line ("0::/a"), or "" when there is none. v1 is never nil.
func ParseProcCgroup(r io.Reader) (v1 map[string]string, v2 string, err error) {
	v1 = make(map[string]string)
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		// The path is last and may itself hold ':'.
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || f[0] == "" || !strings.HasPrefix(f[2], "/") {
			return nil, "", fmt.Errorf("cgroup: parse line %d %q: want id:controllers:/path", n, line)
		}
		if f[0] == "0" && f[1] == "" {
			v2 = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c != "" {
				v1[c] = f[2]
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, "", fmt.Errorf("cgroup: parse: %w", err)
	}
	return v1, v2, nil
}

// ParseUsageAll parses a v1 cpuacct.usage_all file, a header "cpu user
// system" and a line "cpu user system" of nanoseconds for each CPU, and
// returns the user and system time summed over the CPUs. A missing or
// different header or a malformed line is an error.
func ParseUsageAll(r io.Reader) (user, system int64, err error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return 0, 0, fmt.Errorf("cgroup: parse cpuacct.usage_all: %w", err)
	}
	return parseUsageAll(string(b))
}

// parseUsageAll is ParseUsageAll of the file's text, already read.
func parseUsageAll(s string) (user, system int64, err error) {
	n := 0
	for line := range strings.Lines(s) {
		n++
		f := strings.Fields(line)
		if n == 1 {
			if strings.Join(f, " ") != "cpu user system" {
				return 0, 0, fmt.Errorf("cgroup: parse cpuacct.usage_all: header %q, want \"cpu user system\"", strings.TrimSpace(line))
			}
			continue
		}
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return 0, 0, fmt.Errorf("cgroup: parse cpuacct.usage_all line %d %q: want 3 fields", n, strings.TrimSpace(line))
		}
		var v [2]int64
		for i := range v {
			if v[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
				return 0, 0, fmt.Errorf("cgroup: parse cpuacct.usage_all line %d %q: %w", n, strings.TrimSpace(line), err)
			}
		}
		user += v[0]
		system += v[1]
	}
	if n == 0 {
		return 0, 0, fmt.Errorf("cgroup: parse cpuacct.usage_all: header \"\", want \"cpu user system\"")
	}
	return user, system, nil
}
