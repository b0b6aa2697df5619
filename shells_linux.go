package svc

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/svc-sandbox/svc/internal/cgroup"
	"github.com/svc-sandbox/svc/internal/runner"
)

// shell is a sandbox shell with, on cgroup v1, the cpu and cpuacct groups
// its tasks share: making and removing those per task cost more than
// starting their accounting afresh (cgroup.Group.ChildSharing), while a
// task's memory and pids groups, whose peaks cannot be reset, are its own.
// The shell's init is in none of them.
type shell struct {
	*runner.Shell
	share     *cgroup.CPUShare // the cpu group, its files held open; nil on v2
	idleSince uint64           // when put back idle (host.idleSeq)
	own       bool             // of a request with limits of its own: never idle
}

// close ends the shell and removes its group.
func (sh *shell) close() error {
	err := sh.Shell.Close()
	if sh.share != nil {
		sh.share.Close()
		err = errors.Join(err, sh.share.Group().Remove())
	}
	return err
}

// idleCaps returns how many idle shells an identity slot keeps (twice what
// the widest step can use at once: a step's tasks and those its next step
// prepares meanwhile) and how many all slots keep. Requests one after
// another go round the slots of the requests prepared ahead, of those
// being prepared and of the one running, each slot wanting its full share
// when its turn comes: all of them keep theirs, and at least four times
// the tasks that can run at once. Enough for most tasks to find a shell,
// while the idle processes and network namespaces stay bounded (96 by
// default on 2 CPUs, about 0.4 MiB each).
func idleCaps(l Limits) (perSlot, total int) {
	perSlot = 2 * l.MaxParallelTasks
	rotating := poolSize(l.MaxConcurrency) + preparers(l.MaxConcurrency) + 2
	return perSlot, max(4*l.MaxConcurrency, perSlot*rotating)
}

// takeShell returns an idle shell of the request's identity slot, or
// builds one; a request with limits of its own builds its own. While a
// cell of the request is closing in the background, it waits for that
// cell's shell rather than build one: the shell is back in well under a
// millisecond (the init undoes the task's mounts), where building costs
// more than that, and the spare one would be closed again once the slot
// keeps as many idle shells as it may. A judged submission's request
// (svc bench's judged row: 8 tasks a step, the next step's 8 cells built
// as it starts) built and closed two or three shells more each time.
func (h *host) takeShell(ctx context.Context, rq *request) (*shell, error) {
	h.shellMu.Lock()
	for !rq.own {
		if idle := h.shells[rq.slot]; len(idle) > 0 {
			sh := idle[len(idle)-1]
			h.shells[rq.slot] = idle[:len(idle)-1]
			h.idleShells--
			h.shellMu.Unlock()
			return sh, nil
		}
		if rq.returning == 0 {
			break
		}
		back := h.shellBack
		h.shellWaits++
		h.shellMu.Unlock()
		select {
		case <-back:
		case <-ctx.Done():
			h.shellMu.Lock()
			h.shellWaits--
			h.shellMu.Unlock()
			return nil, context.Cause(ctx)
		}
		h.shellMu.Lock()
		h.shellWaits--
	}
	h.shellMu.Unlock()
	rs, err := runner.BuildShell(ctx, &runner.ShellConfig{Spec: rq.cellSpec(), InitUID: rq.initUID, TaskUID: rq.taskUID})
	if err != nil {
		return nil, err
	}
	sh := &shell{Shell: rs, own: rq.own}
	if h.cg.Version() == cgroup.V1 {
		g, err := h.service.Child(fmt.Sprintf("shell-%d", h.nshell.Add(1)))
		if err != nil {
			return nil, errors.Join(err, sh.close())
		}
		l := rq.limits.CPUMax
		if sh.share, err = g.ShareCPU(cgroup.Limits{CPUQuota: l.Quota, CPUPeriod: l.Period}); err != nil {
			return nil, errors.Join(err, g.Remove(), sh.close())
		}
	}
	return sh, nil
}

// dropShells closes the idle shells.
func (h *host) dropShells() error {
	h.shellMu.Lock()
	shells := h.shells
	h.shells = make(map[int][]*shell)
	h.idleShells = 0
	h.shellMu.Unlock()
	var err error
	for _, idle := range shells {
		for _, sh := range idle {
			err = errors.Join(err, sh.close())
		}
	}
	return err
}

// putShell keeps a shell whose task is done for the slot's next one, or
// closes it (always one built for a request's own limits). When all
// slots together keep as many idle shells as they may, the one idle
// longest, of any slot, makes room: slots that served the last requests
// keep their shells, where slots no request has used for a while would
// otherwise hold every place and have the busy ones build a shell for
// each task. back is the request whose cell closing in the background
// gives the shell back (see takeShell), or nil.
func (h *host) putShell(slot int, sh *shell, back *request) error {
	h.shellMu.Lock()
	if back != nil {
		// Kept or not, the shell is no longer on its way back: a task
		// waiting for it (takeShell) takes it or builds one.
		back.returning--
		close(h.shellBack)
		h.shellBack = make(chan struct{})
	}
	if sh.own || !sh.Usable() || h.closing || len(h.shells[slot]) >= h.idlePerSlot {
		h.shellMu.Unlock()
		return sh.close()
	}
	var evicted *shell
	if h.idleShells >= h.idleTotal {
		evicted = h.evictIdle()
	}
	h.idleSeq++
	sh.idleSince = h.idleSeq
	h.shells[slot] = append(h.shells[slot], sh)
	h.idleShells++
	h.shellMu.Unlock()
	if evicted != nil {
		return evicted.close()
	}
	return nil
}

// evictIdle takes out of the idle shells the one put back first. Each
// slot's list is in the order its shells were put back, so the candidates
// are the lists' first shells. The caller holds shellMu.
func (h *host) evictIdle() *shell {
	victim := -1
	for slot, idle := range h.shells {
		if len(idle) > 0 && (victim < 0 || idle[0].idleSince < h.shells[victim][0].idleSince) {
			victim = slot
		}
	}
	if victim < 0 {
		return nil
	}
	sh := h.shells[victim][0]
	h.shells[victim] = slices.Delete(h.shells[victim], 0, 1)
	h.idleShells--
	return sh
}
