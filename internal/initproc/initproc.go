package initproc

// #cgo CFLAGS: -Wall -O2
// #include "proto.h"
import "C"

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"

	"github.com/svc-sandbox/svc/internal/mount"
)

// Arg0 is the argv[0] that makes a binary importing this package act as
// the sandbox init instead of starting normally.
const Arg0 = C.SVC_INIT_ARG0

// File descriptors of the init process.
const (
	FDConfig = C.SVC_FD_CONFIG
	FDStatus = C.SVC_FD_STATUS
)

// Rlimit is one resource limit of the task.
type Rlimit struct {
	Resource   int
	Soft, Hard uint64
}

// Spec is everything the init and the task need to know.
type Spec struct {
	Mounts   mount.Plan
	Hostname string
	UID, GID int // the task's identity inside the user namespace
	Rlimits  []Rlimit
	Dir      string   // working directory inside the sandbox
	Cmd      string   // as given by the user
	Args     []string // argv, argv[0] first
	Env      []string // NAME=value
	Filter   []byte   // seccomp program (struct sock_filter[]); nil for none
}

// Encode returns the config records of s.
func (s *Spec) Encode() []byte {
	var b []byte
	rec := func(tag byte, fields ...string) {
		n := 0
		for _, f := range fields {
			n += len(f) + 1
		}
		b = append(b, tag)
		b = binary.LittleEndian.AppendUint32(b, uint32(n))
		for _, f := range fields {
			b = append(b, f...)
			b = append(b, 0)
		}
	}
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	for _, op := range s.Mounts {
		opt := "0"
		if op.Optional {
			opt = "1"
		}
		rec(C.SVC_REC_MOUNT, string(op.Kind), op.Src, op.Dst, op.FSType, op.Data,
			u(uint64(op.Flags)), u(op.Attr), u(uint64(op.Mode)), opt)
	}
	rec(C.SVC_REC_HOSTNAME, s.Hostname)
	rec(C.SVC_REC_IDS, u(uint64(s.UID)), u(uint64(s.GID)))
	for _, r := range s.Rlimits {
		rec(C.SVC_REC_RLIMIT, u(uint64(r.Resource)), u(r.Soft), u(r.Hard))
	}
	rec(C.SVC_REC_DIR, s.Dir)
	rec(C.SVC_REC_CMD, s.Cmd)
	for _, a := range s.Args {
		rec(C.SVC_REC_ARG, a)
	}
	for _, e := range s.Env {
		rec(C.SVC_REC_ENV, e)
	}
	if len(s.Filter) > 0 {
		b = append(b, C.SVC_REC_FILTER)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s.Filter)))
		b = append(b, s.Filter...)
	}
	return b
}

// Report is what the init said about one task.
type Report struct {
	SetupError   string             // 'F': the sandbox could not be built
	WorkdirError string             // 'W': the working directory failed
	Started      bool               // 'S': the task process was created
	Exited       bool               // 'X': the task ended by itself
	Status       syscall.WaitStatus // valid when Exited
}

// ReadReport reads status lines from r until EOF. started, if not nil, is
// called when the task process has been created.
func ReadReport(r io.Reader, started func()) (Report, error) {
	var rep Report
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 2 || line[1] != ' ' {
			return rep, fmt.Errorf("init status: malformed line %q", line)
		}
		text := line[2:]
		switch line[0] {
		case C.SVC_REC_SETUP_FAILED:
			rep.SetupError = text
		case C.SVC_REC_WORKDIR:
			rep.WorkdirError = text
		case C.SVC_REC_STARTED:
			rep.Started = true
			if started != nil {
				started()
			}
		case C.SVC_REC_EXIT:
			st, err := strconv.Atoi(strings.TrimSpace(text))
			if err != nil {
				return rep, fmt.Errorf("init status: bad exit line %q", line)
			}
			rep.Exited = true
			rep.Status = syscall.WaitStatus(st)
		default:
			return rep, fmt.Errorf("init status: unknown line %q", line)
		}
	}
	return rep, sc.Err()
}
