package initproc

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/svc-sandbox/svc/internal/mount"
)

// decode splits config records the way init.c does.
func decode(t *testing.T, b []byte) (tags []byte, fields [][]string, raw [][]byte) {
	t.Helper()
	for len(b) > 0 {
		if len(b) < 5 {
			t.Fatalf("short record header: %q", b)
		}
		tag, n := b[0], binary.LittleEndian.Uint32(b[1:5])
		if int(n) > len(b)-5 {
			t.Fatalf("record %q longer than the data", tag)
		}
		data := b[5 : 5+n]
		tags = append(tags, tag)
		raw = append(raw, data)
		fields = append(fields, strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00"))
		b = b[5+n:]
	}
	return
}

func TestEncode(t *testing.T) {
	filter := []byte{1, 0, 2, 0, 0, 0, 0, 0} // NUL bytes must survive
	s := &Spec{
		Mounts: mount.Plan{
			{Kind: mount.Bind, Src: "/usr", Dst: "/r/usr", Attr: 7},
			{Kind: mount.Mkdir, Dst: "/r/svc", Mode: 0o755, Optional: true},
		},
		Hostname: "svc", UID: 1000, GID: 1001,
		Rlimits: []Rlimit{{Resource: 4, Soft: 0, Hard: 0}},
		Dir:     "/svc", Cmd: "sh",
		Args:   []string{"sh", "-c", "echo 'a\nb'"},
		Env:    []string{"PATH=/bin", "EMPTY="},
		Filter: filter,
	}
	tags, fields, raw := decode(t, s.Encode())
	if got := string(tags); got != "mmhirdcaaaeef" {
		t.Fatalf("record order %q", got)
	}
	want := [][]string{
		{"bind", "/usr", "/r/usr", "", "", "0", "7", "0", "0"},
		{"mkdir", "", "/r/svc", "", "", "0", "0", "493", "1"},
		{"svc"}, {"1000", "1001"}, {"4", "0", "0"}, {"/svc"}, {"sh"},
		{"sh"}, {"-c"}, {"echo 'a\nb'"}, {"PATH=/bin"}, {"EMPTY="},
	}
	for i, w := range want {
		if !slices.Equal(fields[i], w) {
			t.Errorf("record %d (%c): %q, want %q", i, tags[i], fields[i], w)
		}
	}
	if !bytes.Equal(raw[len(raw)-1], filter) {
		t.Errorf("filter %v, want %v", raw[len(raw)-1], filter)
	}
}

func TestReadReport(t *testing.T) {
	started := 0
	rep, err := ReadReport(strings.NewReader("S 2\nX 9\n"), func() { started++ })
	if err != nil {
		t.Fatal(err)
	}
	if started != 1 || !rep.Started || !rep.Exited || !rep.Status.Signaled() || rep.Status.Signal() != syscall.SIGKILL {
		t.Errorf("report %+v, started %d", rep, started)
	}
	rep, err = ReadReport(strings.NewReader("W working_dir /x: No such file or directory\n"), nil)
	if err != nil || rep.WorkdirError != "working_dir /x: No such file or directory" || rep.Started {
		t.Errorf("report %+v, %v", rep, err)
	}
	rep, err = ReadReport(strings.NewReader("F mount /r: Permission denied\n"), nil)
	if err != nil || rep.SetupError != "mount /r: Permission denied" {
		t.Errorf("report %+v, %v", rep, err)
	}
	for _, bad := range []string{"Z what\n", "X\n", "X nine\n", "S\n"} {
		if _, err := ReadReport(strings.NewReader(bad), nil); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
