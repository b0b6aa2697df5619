package svc

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"runtime"
	"slices"
)

// cacheFormat is part of every key. Bump it when the layer format, what a
// key covers, or what a replay reproduces changes: old layers then miss.
const cacheFormat = 1

// keyRoot is the hash every key of a Sandbox with cfg chains from: the
// format, the namespace, the image, its toolchains, the architecture and
// every limit.
func (c *StepCache) keyRoot(cfg *Config) [32]byte {
	var k keyHash
	k.init()
	k.str("svc step cache")
	k.num(cacheFormat)
	k.str(c.ns)
	k.str(c.imageID)
	k.num(int64(len(c.toolchains)))
	for _, t := range c.toolchains {
		k.str(t)
	}
	k.str(runtime.GOARCH)
	// Every field by name; a field added to Limits is covered unasked.
	k.str(fmt.Sprintf("%+v", cfg.Limits))
	k.num(cfg.WorkspaceSize)
	return k.sum()
}

// chainKeys returns the keys of steps, the leading steps of a plan: each
// the hash of the previous key (root for the first) and the step's
// canonical form, so a key names the whole state its step ran in.
func chainKeys(root [32]byte, steps []stepPlan) []string {
	keys := make([]string, len(steps))
	prev := root
	for i := range steps {
		var k keyHash
		k.init()
		k.h.Write(prev[:])
		tasks := steps[i].tasks
		k.num(int64(len(tasks)))
		for j := range tasks {
			k.task(&tasks[j])
		}
		prev = k.sum()
		keys[i] = hex.EncodeToString(prev[:])
	}
	return keys
}

// keyHash hashes an unambiguous encoding: each string is preceded by its
// length.
type keyHash struct {
	h   hash.Hash
	buf [binary.MaxVarintLen64]byte
}

func (k *keyHash) init()        { k.h = sha256.New() }
func (k *keyHash) num(v int64)  { k.h.Write(binary.AppendVarint(k.buf[:0], v)) }
func (k *keyHash) str(s string) { k.num(int64(len(s))); k.h.Write([]byte(s)) }

func (k *keyHash) sum() (s [32]byte) {
	k.h.Sum(s[:0])
	return s
}

// task hashes what makes a task's run: everything but Cache. Files are
// their content's SHA-256, which is what a file_id is, so an inline file
// and a stored one with the same bytes are the same. The working dir and
// the profile are the resolved ones, the profile with the digest of its
// compiled policy. Of the environment, the task's own env: the fixed one
// is the same for every task. Of its limits, those that differ from the
// Sandbox's. The outputs, sorted, come last, and only when the task has
// some, then stdin_from, stdin_path, stdout_path and stderr_path, each
// only when set. Each field added later follows
// only when set, behind a tag that starts with a NUL byte, which no cmd
// holds: a task without it keeps its key.
func (k *keyHash) task(t *taskPlan) {
	k.str(t.Cmd)
	k.num(int64(len(t.Args)))
	for _, a := range t.Args {
		k.str(a)
	}
	env := sortedKeys(t.Env)
	k.num(int64(len(env)))
	for _, name := range env {
		k.str(name)
		k.str(t.Env[name])
	}
	k.str(t.Stdin)
	k.str(t.dir)
	files := sortedKeys(t.Files)
	k.num(int64(len(files)))
	for _, p := range files {
		k.str(p)
		f := t.Files[p]
		if f.FileID != "" {
			k.str(f.FileID)
		} else {
			sum := sha256.Sum256([]byte(f.Content))
			k.str(hex.EncodeToString(sum[:]))
		}
	}
	k.str(policyIdentity(t.profile))
	// The limits the task lowers (the Sandbox's are in the root): none
	// for most tasks, which hash as they did before tasks had limits.
	if t.lowered != (TaskLimits{}) {
		k.str("\x00limits")
		for _, f := range t.lowered.fields() {
			k.num(*f.v)
		}
	}
	if len(t.Outputs) > 0 {
		// Only when present, behind a tag no cmd can hold: a task
		// without outputs keeps its key. Sorted: their order in the
		// request makes no difference to the result.
		k.str("\x00outputs")
		outs := slices.Sorted(slices.Values(t.Outputs))
		k.num(int64(len(outs)))
		for _, p := range outs {
			k.str(p)
		}
	}
	if t.StdinFrom != nil {
		k.str("\x00stdin_from")
		k.num(int64(*t.StdinFrom))
	}
	// The stream paths, each only when set.
	for _, f := range [...]struct{ tag, v string }{
		{"\x00stdin_path", t.StdinPath}, {"\x00stdout_path", t.StdoutPath}, {"\x00stderr_path", t.StderrPath},
	} {
		if f.v != "" {
			k.str(f.tag)
			k.str(f.v)
		}
	}
}

// cacheable reports whether the task may be stored and replayed: its
// Cache, else the request's, else true for a legacy request.
func (t *Task) cacheable(r *Request) bool {
	if t.Cache != nil {
		return *t.Cache
	}
	return r.Cache || r.Legacy
}

// leadingCacheable returns the number of steps of the leading run of
// cacheable steps: a step is cacheable when all its tasks are.
func (r *Request) leadingCacheable() int {
	for i, s := range r.Steps {
		for j := range s.Tasks {
			if !s.Tasks[j].cacheable(r) {
				return i
			}
		}
	}
	return len(r.Steps)
}
