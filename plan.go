package svc

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// The plan stage of a request: what Run settles before it takes a slot.
// The request is validated, its files checked against the workspace size
// and its stored files opened, and each task resolved once: its profile,
// working dir, environment and limits. The cache key and the run read the
// resolved values, so they always agree on them.

// plan is a request made ready to run; close releases its stored files.
type plan struct {
	req    *Request
	stored storedFiles
	steps  []stepPlan // one for each step of req, in order
	// keys are the step keys of the leading cacheable steps; nil when the
	// Sandbox has no cache, or the first step is not cacheable.
	keys []string
	// ahead is what the step cache found for keys before the request
	// took its slots (admit); close releases it.
	ahead *lookAhead
	// width is the number of tasks of the widest step: the task slots the
	// request holds.
	width int
}

// stepPlan is a step of a plan: its shape and its tasks, resolved.
type stepPlan struct {
	parallel bool
	tasks    []taskPlan
}

// taskPlan is a task of a plan with every default resolved. Its Task is
// the request's, validated and normalized.
type taskPlan struct {
	*Task
	profile Profile  // SandboxProfile, or the Sandbox's default profile
	dir     string   // WorkingDir, or workspaceDir
	env     []string // taskEnv, overridden and extended by Env
	// limits are the Sandbox's, lowered by the task's Limits: the run's
	// wall and CPU time and output are held to them, and the cell it runs
	// in, built ahead with its request's, takes its memory, pids and
	// rlimits where they differ. lowered are the task's Limits that
	// differ from the Sandbox's (zero elsewhere), which its cache key
	// holds.
	limits  Limits
	lowered TaskLimits
}

// workspaceDir is where a task sees the workspace: its working dir and
// HOME unless it says otherwise.
const workspaceDir = "/svc"

// taskEnv is the fixed environment of every task (API.md); the task's own
// env is added to it.
var taskEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + workspaceDir, "TMPDIR=/tmp", "LANG=C.UTF-8"}

// plan validates req and makes its plan. A request whose inline files
// alone do not fit in the workspace is refused before any stored file is
// opened.
func (s *Sandbox) plan(req *Request) (*plan, error) {
	if err := req.Validate(s.limits, s.cfg.AllowedProfiles); err != nil {
		return nil, err
	}
	if err := checkOutputsStore(req, s.cfg.Files); err != nil {
		return nil, err
	}
	// Inline files first: a request refused for its size opens nothing.
	if err := s.checkPlacedBytes(req, nil); err != nil {
		return nil, err
	}
	stored, err := s.openStored(req)
	if err != nil {
		return nil, err
	}
	if err := s.checkPlacedBytes(req, stored); err != nil {
		stored.close()
		return nil, err
	}
	p := &plan{req: req, stored: stored, steps: resolveSteps(req, s.cfg.DefaultProfile, s.limits), width: req.width()}
	// The keys of the leading cacheable steps: CPU only, before a slot is
	// taken.
	if c := s.cfg.Cache; c != nil {
		if n := req.leadingCacheable(); n > 0 {
			p.keys = chainKeys(c.keyRoot(&s.cfg), p.steps[:n])
		}
	}
	return p, nil
}

// close releases the plan's stored files and the layers found ahead.
func (p *plan) close() {
	p.ahead.close()
	p.stored.close()
}

// resolveSteps resolves the tasks of every step of req, with def the
// profile of a task that names none and lim the Sandbox's limits, which
// a task's Limits lower.
func resolveSteps(req *Request, def Profile, lim Limits) []stepPlan {
	steps := make([]stepPlan, len(req.Steps))
	for i := range req.Steps {
		s := &req.Steps[i]
		steps[i] = stepPlan{parallel: s.Parallel, tasks: make([]taskPlan, len(s.Tasks))}
		for j := range s.Tasks {
			steps[i].tasks[j] = resolveTask(&s.Tasks[j], def, lim)
		}
	}
	return steps
}

// resolveTask resolves t: the one place that says what a task that leaves
// a field empty gets.
func resolveTask(t *Task, def Profile, lim Limits) taskPlan {
	tp := taskPlan{Task: t, profile: t.SandboxProfile, dir: t.WorkingDir, env: t.environ(),
		limits: lim.lowered(t.Limits), lowered: t.Limits.differing(lim)}
	if tp.profile == "" {
		tp.profile = def
	}
	if tp.dir == "" {
		tp.dir = workspaceDir
	}
	return tp
}

// environ returns the task's environment: the fixed one, overridden and
// extended by the task's env, sorted by name after the fixed ones.
func (t *Task) environ() []string {
	env := slices.Clone(taskEnv)
	names := make([]string, 0, len(t.Env))
	for k := range t.Env {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		kv := k + "=" + t.Env[k]
		if i := slices.IndexFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") }); i >= 0 {
			env[i] = kv
		} else {
			env = append(env, kv)
		}
	}
	return env
}

// width is the number of tasks of the widest step.
func (r *Request) width() int {
	w := 1
	for _, s := range r.Steps {
		w = max(w, len(s.Tasks))
	}
	return w
}

// storedFile is a stored file a request uses, opened before it runs.
type storedFile struct {
	f    *os.File
	size int64
}

// storedFiles are the stored files of a request by file id. The open
// files keep their contents readable for the whole request, even when the
// stored files are deleted or expire meanwhile.
type storedFiles map[string]storedFile

func (m storedFiles) close() {
	for _, sf := range m {
		sf.f.Close()
	}
}

// openStored opens every stored file the tasks of req refer to, in request
// order. A file that is not stored is file_not_found, naming where the
// first reference to it is.
func (s *Sandbox) openStored(req *Request) (storedFiles, error) {
	var m storedFiles
	for i, step := range req.Steps {
		sp := indexPath("steps", i)
		for j, t := range step.Tasks {
			tp := taskPath(sp, step, j)
			for _, p := range sortedKeys(t.Files) {
				id := t.Files[p].FileID
				if id == "" {
					continue
				}
				if _, ok := m[id]; ok {
					continue
				}
				missing := &Error{Code: CodeFileNotFound,
					Msg: fmt.Sprintf("%s: file_id %s is not stored", keyPath(tp+".files", p), id)}
				if s.cfg.Files == nil {
					return nil, missing
				}
				f, info, err := s.cfg.Files.Open(id)
				if err != nil {
					m.close()
					if CodeOf(err) == CodeNotFound {
						return nil, missing
					}
					return nil, err
				}
				if m == nil {
					m = make(storedFiles)
				}
				m[id] = storedFile{f: f, size: info.Size}
			}
		}
	}
	return m, nil
}

// checkPlacedBytes refuses a request whose files do not fit in the
// workspace: for each path the largest content placed there, summed over
// paths. Stored files missing from stored count as empty.
func (s *Sandbox) checkPlacedBytes(req *Request, stored storedFiles) error {
	largest := make(map[string]int64)
	for _, step := range req.Steps {
		for _, t := range step.Tasks {
			for p, f := range t.Files {
				n := int64(len(f.Content))
				if f.FileID != "" {
					n = stored[f.FileID].size
				}
				largest[p] = max(largest[p], n)
			}
		}
	}
	var n int64
	for _, v := range largest {
		n += v
	}
	if n > s.cfg.WorkspaceSize {
		return &Error{Code: CodeLimitsExceeded,
			Msg: fmt.Sprintf("files: %d bytes in all exceed the workspace size of %d bytes", n, s.cfg.WorkspaceSize)}
	}
	return nil
}
