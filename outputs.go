package svc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
)

// Collected outputs (Task.Outputs): after a step's tasks have all ended,
// whatever their outcome, the files each task named are read from the
// workspace and kept in the file store, like uploads. Nothing of the
// request runs then: every process of a task dies with it, so what is
// read is what the step left, and it cannot change while it is read.
//
// A replayed step has no outputs of its own in its layer: the replay
// leaves the workspace as the run left it, byte for byte, so its outputs
// are read from the workspace again and stored again where the store
// lacks them (another instance, an expired or deleted file). Its files
// come from the layer that way, and the layer format needs nothing more.
//
// The outputs of one request together cost the file store at most the
// workspace size (outputBudget): a sparse file is stored as the bytes it
// reads as, holes as zeros, so a task could otherwise have the store keep
// far more than it ever wrote (8 tasks of 32 outputs of 64 MiB of holes
// each, 16 GiB, from a workspace of 256 MiB).

// outputReader is a collected output opened for reading.
type outputReader interface {
	io.ReaderAt
	io.Closer
}

// The errors of workspace.openOutput that are an output's error entry.
var (
	errOutputNotFound   = errors.New("no file at the path")
	errOutputNotRegular = errors.New("not a regular file reached without a symlink")
)

// checkOutputsStore refuses a request with outputs when there is no file
// store to keep them in, naming the first task that has some.
func checkOutputsStore(req *Request, files *FileStore) error {
	if files != nil {
		return nil
	}
	for i, step := range req.Steps {
		for j, t := range step.Tasks {
			if len(t.Outputs) > 0 {
				return fieldErr(taskPath(indexPath("steps", i), step, j)+".outputs",
					"the service has no file store to keep outputs in")
			}
		}
	}
	return nil
}

// outputBudget is what the collected outputs of a request may still cost
// the file store: the workspace size (WORKSPACE_SIZE_BYTES), less the size
// of each output taken so far, in the order they are collected (step by
// step, task by task, path by path), whether or not the store then kept
// it. An output it has no room for is store_full and is not read. It
// counts sizes, not what the store already held, so a replay's outputs
// are its run's. One budget serves a request's every attempt (execute
// runs it again after a failed replay).
type outputBudget struct {
	left int64
}

func (s *Sandbox) newOutputBudget() *outputBudget { return &outputBudget{left: s.cfg.WorkspaceSize} }

// take takes size bytes, or reports that they do not fit.
func (b *outputBudget) take(size int64) bool {
	if size > b.left {
		return false
	}
	b.left -= size
	return true
}

// outputLimit is the largest output kept: the largest upload, by the
// Sandbox's limits and by the file store's own.
func (s *Sandbox) outputLimit() int64 {
	return min(s.limits.UploadFileLimit, s.cfg.Files.maxPut)
}

// collectOutputs sets the Outputs of the results of sr, the step's, for
// each task that ran and named outputs: read from ws and stored, each
// taken from budget, the request's. A task without outputs, or that did
// not run, has none. An error is the host's (the workspace could not be
// read), not an output's.
func (s *Sandbox) collectOutputs(ctx context.Context, ws workspace, step *stepPlan, sr *StepResult, budget *outputBudget) error {
	for j := range step.tasks {
		t, r := &step.tasks[j], &sr.Results[j]
		if len(t.Outputs) == 0 || !r.Outcome.Ran() {
			r.Outputs = nil
			continue
		}
		m := make(map[string]OutputFile, len(t.Outputs))
		for _, p := range t.Outputs {
			o, err := s.collectOutput(ctx, ws, p, budget)
			if err != nil {
				return fmt.Errorf("outputs: %q: %w", p, err)
			}
			m[p] = o
		}
		r.Outputs = m
	}
	return nil
}

// collectOutput reads the output at p and stores it. A file over the
// limit is too_large by its size, and one budget has no room for is
// store_full, before a byte of it is read.
func (s *Sandbox) collectOutput(ctx context.Context, ws workspace, p string, budget *outputBudget) (OutputFile, error) {
	f, size, err := ws.openOutput(p)
	switch {
	case errors.Is(err, errOutputNotFound):
		return OutputFile{Error: OutputNotFound}, nil
	case errors.Is(err, errOutputNotRegular):
		return OutputFile{Error: OutputNotRegular}, nil
	case err != nil:
		return OutputFile{}, err
	}
	defer f.Close()
	limit := s.outputLimit()
	if size > limit {
		return OutputFile{Error: OutputTooLarge}, nil
	}
	if !budget.take(size) {
		s.log.Info("outputs: not keeping an output past the request's share of the file store",
			"path", p, "size", size, "workspace_size", s.cfg.WorkspaceSize)
		return OutputFile{Error: OutputStoreFull}, nil
	}
	sf, err := s.cfg.Files.putOutput(ctx, f, path.Base(p), limit)
	switch CodeOf(err) {
	case "":
		return OutputFile{FileID: sf.ID, Size: sf.Size}, nil
	case CodePayloadTooLarge:
		return OutputFile{Error: OutputTooLarge}, nil
	case CodeCapacityExhausted:
		return OutputFile{Error: OutputStoreFull}, nil
	case CodeCancelled, CodeDeadlineExceeded:
		return OutputFile{}, err
	}
	// Logged by the store when it failed itself; the read may have.
	s.log.Error("outputs: keep a file in the file store", "path", p, "err", err)
	return OutputFile{Error: OutputStoreFull}, nil
}

// withoutOutputs returns rs with no Outputs, as a layer stores results:
// what the file store said is not the layer's to keep. (A step's outputs
// are collected after its layer is stored; this holds whatever the
// order.)
func withoutOutputs(rs []Result) []Result {
	if !slices.ContainsFunc(rs, func(r Result) bool { return r.Outputs != nil }) {
		return rs
	}
	out := slices.Clone(rs)
	for i := range out {
		out[i].Outputs = nil
	}
	return out
}
