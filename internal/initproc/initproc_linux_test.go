package initproc

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strconv"
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
	cell := &CellSpec{
		Mounts: mount.Plan{
			{Kind: mount.Bind, Src: "/usr", Dst: "/r/usr", Attr: 7},
			{Kind: mount.Mount, Src: "proc", Dst: "/r/proc", FSType: "proc", Flags: 14, Optional: true},
		},
		Hostname: "svc", UID: 1000, GID: 1001,
		Rlimits: []Rlimit{{Resource: 4, Soft: 0, Hard: 0}},
	}
	frame := cell.Encode()
	if n := binary.LittleEndian.Uint32(frame); int(n) != len(frame)-4 {
		t.Fatalf("frame length %d, want %d", n, len(frame)-4)
	}
	tags, fields, _ := decode(t, frame[4:])
	if got, want := string(tags), "mmhir"+strings.Repeat("u", len(UserNamespaceLimits)); got != want {
		t.Fatalf("cell record order %q, want %q", got, want)
	}
	want := [][]string{
		{"bind", "/usr", "/r/usr", "", "", "0", "7", "0"},
		{"mount", "proc", "/r/proc", "proc", "", "14", "0", "1"},
		{"svc"}, {"1000", "1001"}, {"4", "0", "0"},
	}
	// Every sandbox's user namespace limits, whatever the spec.
	for _, l := range UserNamespaceLimits {
		want = append(want, []string{l.Name, strconv.Itoa(l.Max)})
	}
	for i, w := range want {
		if !slices.Equal(fields[i], w) {
			t.Errorf("cell record %d (%c): %q, want %q", i, tags[i], fields[i], w)
		}
	}

	filter := []byte{1, 0, 2, 0, 0, 0, 0, 0} // NUL bytes must survive
	task := &TaskSpec{
		Dir: "/svc", Cmd: "sh",
		Args:    []string{"sh", "-c", "echo 'a\nb'"},
		Env:     []string{"PATH=/bin", "EMPTY="},
		Filter:  filter,
		Rlimits: []Rlimit{{Resource: 3, Soft: 67108864, Hard: 67108864}},
	}
	tags, fields, raw := decode(t, task.Encode())
	if got := string(tags); got != "dcaaaeerf" {
		t.Fatalf("task record order %q", got)
	}
	want = [][]string{{"/svc"}, {"sh"}, {"sh"}, {"-c"}, {"echo 'a\nb'"}, {"PATH=/bin"}, {"EMPTY="}, {"3", "67108864", "67108864"}}
	for i, w := range want {
		if !slices.Equal(fields[i], w) {
			t.Errorf("task record %d (%c): %q, want %q", i, tags[i], fields[i], w)
		}
	}
	if !bytes.Equal(raw[len(raw)-1], filter) {
		t.Errorf("filter %v, want %v", raw[len(raw)-1], filter)
	}
}

func TestStatus(t *testing.T) {
	st := NewStatus(strings.NewReader("R \nX 9\n"))
	if err := st.WaitReady(); err != nil {
		t.Fatal(err)
	}
	rep, err := st.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Ready || !rep.Exited || !rep.Status.Signaled() || rep.Status.Signal() != syscall.SIGKILL {
		t.Errorf("report %+v", rep)
	}
	rep, err = NewStatus(strings.NewReader("R \nW working_dir /x: No such file or directory\n")).Finish()
	if err != nil || rep.WorkdirError != "working_dir /x: No such file or directory" || rep.Exited {
		t.Errorf("report %+v, %v", rep, err)
	}
	// A setup failure before the task was ready fails the wait with it.
	err = NewStatus(strings.NewReader("F mount /r: Permission denied\n")).WaitReady()
	if err == nil || !strings.Contains(err.Error(), "mount /r: Permission denied") {
		t.Errorf("WaitReady: %v", err)
	}
	if err := NewStatus(strings.NewReader("")).WaitReady(); err == nil {
		t.Error("WaitReady at EOF: no error")
	}
	for _, bad := range []string{"Z what\n", "X\n", "X nine\n", "S 2\n"} {
		if _, err := NewStatus(strings.NewReader(bad)).Finish(); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestSpawnReply(t *testing.T) {
	b := make([]byte, SpawnReplySize)
	binary.NativeEndian.PutUint32(b, uint32(0xffffffff)) // -1
	binary.NativeEndian.PutUint32(b[4:], uint32(syscall.EPERM))
	copy(b[8:], "uid_map: Operation not permitted")
	rep, err := DecodeSpawnReply(b)
	if err != nil || rep.Pid != -1 || rep.Err != syscall.EPERM || rep.Msg != "uid_map: Operation not permitted" {
		t.Errorf("reply %+v, %v", rep, err)
	}
	if _, err := DecodeSpawnReply(b[:10]); err == nil {
		t.Error("a short reply decoded")
	}
	req := (&SpawnRequest{Version: 1, Flags: 2, InitUID: 3, TaskUID: 4, InnerUID: 5, InnerGID: 6}).Encode()
	if len(req) != SpawnRequestSize || binary.NativeEndian.Uint32(req[20:]) != 6 {
		t.Errorf("request %v, want struct svc_spawn's %d bytes", req, SpawnRequestSize)
	}
	msg := (&TaskMessage{NProcs: 4, NTrees: 2, FrameLen: 99}).Encode()
	if len(msg) != TaskMessageSize || binary.NativeEndian.Uint32(msg[4:]) != 4 || binary.NativeEndian.Uint32(msg[12:]) != 99 {
		t.Errorf("task message %v, want struct svc_task's %d bytes", msg, TaskMessageSize)
	}
}
