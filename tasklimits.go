package svc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// TaskLimits lower the service's limits for one task ([Task].Limits): a
// judge compiles under the service's limits and runs the submission under
// the problem's time and memory limits. A zero field is the
// service's value ([Limits]); a set field must be positive (MemoryMax at
// least 4 MiB, as the service's) and at most the service's:
// [Request.Validate] refuses a higher one with [CodeLimitsExceeded],
// naming the field and the service's value. The zero value changes
// nothing.
//
// A lowered limit acts as the service's does, with the same outcome: the
// memory limit is the task's cgroup limit (swap 0) and its stack limit
// (RLIMIT_STACK), the CPU time limit is watched as precisely and backed by
// RLIMIT_CPU, the wall timeout, the pids limit and the output limit (per
// stream) end the task as theirs do. The limits a task runs under are part
// of its step's cache key; a field equal to the service's is the same as
// none.
//
// In JSON it is an object of integers, each field omitted when zero:
//
//	{"wall_timeout_ms": 2000, "cpu_time_limit_ms": 1000, "memory_max_bytes": 67108864,
//	 "pids_max": 1, "output_limit_bytes": 65536}
//
// so durations are whole milliseconds.
type TaskLimits struct {
	WallTimeout  time.Duration // wall_timeout_ms
	CPUTimeLimit time.Duration // cpu_time_limit_ms, over all the task's processes
	MemoryMax    int64         // memory_max_bytes
	PidsMax      int64         // pids_max
	OutputLimit  int64         // output_limit_bytes, per stream
}

// limitField is one field of a TaskLimits: its wire name, its value and
// the value's unit on the wire (a duration counts nanoseconds, sent in
// milliseconds).
type limitField struct {
	name string
	v    *int64
	unit int64
}

// fields returns the fields of l in wire order: the one table that
// decoding, encoding, validation and the cache key walk.
func (l *TaskLimits) fields() [5]limitField {
	ms := int64(time.Millisecond)
	return [5]limitField{
		{"wall_timeout_ms", (*int64)(&l.WallTimeout), ms},
		{"cpu_time_limit_ms", (*int64)(&l.CPUTimeLimit), ms},
		{"memory_max_bytes", &l.MemoryMax, 1},
		{"pids_max", &l.PidsMax, 1},
		{"output_limit_bytes", &l.OutputLimit, 1},
	}
}

// field returns the field of l with wire name name.
func (l *TaskLimits) field(name string) (limitField, bool) {
	for _, f := range l.fields() {
		if f.name == name {
			return f, true
		}
	}
	return limitField{}, false
}

// taskLimits returns the limits of l that a task may lower.
func (l Limits) taskLimits() TaskLimits {
	return TaskLimits{WallTimeout: l.WallTimeout, CPUTimeLimit: l.CPUTimeLimit,
		MemoryMax: l.MemoryMax, PidsMax: l.PidsMax, OutputLimit: l.OutputLimit}
}

// lowered returns l with the fields t sets in place of its own: the
// limits of a task whose Limits are t.
func (l Limits) lowered(t TaskLimits) Limits {
	if t == (TaskLimits{}) {
		return l
	}
	set := func(v *int64, w int64) {
		if w != 0 {
			*v = w
		}
	}
	set((*int64)(&l.WallTimeout), int64(t.WallTimeout))
	set((*int64)(&l.CPUTimeLimit), int64(t.CPUTimeLimit))
	set(&l.MemoryMax, t.MemoryMax)
	set(&l.PidsMax, t.PidsMax)
	set(&l.OutputLimit, t.OutputLimit)
	return l
}

// differing returns the fields of t that differ from l's, zero elsewhere:
// what a task's limits change, which its cache key holds.
func (t TaskLimits) differing(l Limits) TaskLimits {
	svc := l.taskLimits()
	tf, sf := t.fields(), svc.fields()
	for i := range tf {
		if *tf[i].v == *sf[i].v {
			*tf[i].v = 0
		}
	}
	return t
}

// minMemoryMax is the least memory limit, of the service (Limits.validate)
// or a task: a task's cgroup holds a few hundred KiB before its program
// starts, and the kernel refuses a limit below what the group holds.
const minMemoryMax = 4 * MiB

// validate checks t, the limits of the task at p, against l, the
// service's limits with their defaults: a negative field, a duration that
// is not whole milliseconds or a memory limit below minMemoryMax is
// invalid_request, a field above the service's limits_exceeded.
func (t TaskLimits) validate(p string, l Limits) error {
	svc := l.taskLimits()
	tf, sf := t.fields(), svc.fields()
	for i, f := range tf {
		v, fp := *f.v, p+".limits."+f.name
		switch {
		case v == 0:
		case v < 0 && f.unit == 1:
			return fieldErr(fp, "must be positive, got "+strconv.FormatInt(v, 10))
		case v < 0:
			return fieldErr(fp, "must be positive, got "+time.Duration(v).String())
		case v%f.unit != 0:
			return fieldErr(fp, fmt.Sprintf("%v is not a whole number of milliseconds", time.Duration(v)))
		case v > *sf[i].v:
			return newError(CodeLimitsExceeded,
				fmt.Sprintf("%s: %d exceeds the service's %d", fp, v/f.unit, *sf[i].v/f.unit), nil)
		case f.v == &t.MemoryMax && v < minMemoryMax:
			return fieldErr(fp, fmt.Sprintf("must be at least %d (4 MiB), got %d", minMemoryMax, v))
		}
	}
	return nil
}

// MarshalJSON encodes the object of wire fields, without the zero ones.
// A duration that is not whole milliseconds is an error.
func (t TaskLimits) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for _, f := range t.fields() {
		if *f.v == 0 {
			continue
		}
		if *f.v%f.unit != 0 {
			return nil, fmt.Errorf("limits.%s: %v is not a whole number of milliseconds", f.name, time.Duration(*f.v))
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, f.name)
		b = append(b, ':')
		b = strconv.AppendInt(b, *f.v/f.unit, 10)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON decodes the object as [DecodeRequest] does a task's
// "limits": integer literals only, each positive; null leaves t as it is.
func (t *TaskLimits) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		return nil
	}
	d := &requestDecoder{dec: json.NewDecoder(bytes.NewReader(b))}
	d.dec.UseNumber()
	v, err := d.taskLimits("limits")
	if err != nil {
		return err
	}
	*t = v
	return nil
}
