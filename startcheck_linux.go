package svc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"
)

// startCheckTimeout bounds the start check: a task that does nothing,
// given seconds on a loaded or emulated machine.
const startCheckTimeout = 2 * time.Minute

// startCheck runs one task that does nothing (true, from the root
// filesystem's task PATH) in a sandbox built as every task's is, on
// identity slot 0 before any request can take it, so that a host or
// container that cannot give a task its isolation refuses to start
// instead of failing every request: namespaces, mounts, /proc, the
// loopback interface, cgroups, the seccomp filter of the default profile.
// Its error says what a container lacks, as openHost's does.
func (h *host) startCheck() error {
	return withHint(h.runStartCheck())
}

// runStartCheck is startCheck but for the hint of its error.
func (h *host) runStartCheck() error {
	ctx, cancel := context.WithTimeout(context.Background(), startCheckTimeout)
	defer cancel()
	rq, err := h.openRequest(&request{id: "start-check", slot: 0, limits: startCheckLimits(h.cfg.Limits), size: MiB, own: true})
	if err != nil {
		return fmt.Errorf("start check: %w", err)
	}
	profile := h.cfg.DefaultProfile
	task := resolveTask(&Task{Cmd: "true", SandboxProfile: profile}, profile, rq.limits)
	r, err := rq.runTask(ctx, &task, false)
	if cerr := rq.close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("start check: %w", err)
	}
	if r.Outcome != OutcomeExited || r.ExitCode != 0 {
		why := strings.TrimSpace(r.Error + " " + clipOutput(r.Stderr))
		if r.Outcome == OutcomeExited && r.ExitCode == 127 {
			return fmt.Errorf("start check: true is not on the task PATH of the root filesystem (ROOTFS %s): %s", h.cfg.RootFS, why)
		}
		return fmt.Errorf("start check: a task running true under %s ended %s (exit %d): %s", profile, r.Outcome, r.ExitCode, why)
	}
	return nil
}

// startCheckLimits are the limits of the start check's task: the
// service's, but for time, which the service's may make too short for a
// sandbox to start on a loaded machine (the check is of isolation, not
// of limits).
func startCheckLimits(l Limits) Limits {
	l.WallTimeout = max(l.WallTimeout, startCheckTimeout)
	l.CPUTimeLimit = max(l.CPUTimeLimit, startCheckTimeout)
	return l
}

// withHint adds to an error of openHost what to change, where it is one
// that a container runtime's defaults cause.
func withHint(err error) error {
	if err == nil {
		return nil
	}
	if hint := setupHint(err); hint != "" {
		return fmt.Errorf("%w; %s", err, hint)
	}
	return err
}

// setupHint says which privilege a container lacks, judging by the
// error of a sandbox's setup, or "" when it is none of those known.
// docs/deployment.md has the measured table.
func setupHint(err error) string {
	msg := err.Error()
	has := func(s string) bool { return strings.Contains(msg, s) }
	switch {
	case errors.Is(err, syscall.EROFS) && has("cgroup"):
		return "the cgroup filesystem is read-only here: run the container with --privileged, or mount /sys/fs/cgroup read-write (docs/deployment.md)"
	case has("not available in") && has("cgroup.controllers"):
		return "the memory, pids and cpu controllers must be delegated to svc's cgroup: run the container with --privileged or a cgroup namespace of its own on a host that delegates them (docs/deployment.md)"
	case !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EACCES) &&
		// The sandbox's init reports its errors as text.
		!has("not permitted") && !has("ermission denied"):
		return ""
	case has("bring lo up"):
		return "a task's network namespace needs CAP_NET_ADMIN: run the container with --privileged or --cap-add NET_ADMIN (docs/deployment.md)"
	case has("mount proc"):
		return "the kernel refuses a task its own /proc while the container's /proc has masked paths: run the container with --privileged or --security-opt unmask=/proc/* (Docker: systempaths=unconfined; Kubernetes: procMount: Unmasked) (docs/deployment.md)"
	case has("cgroup"):
		return "svc's cgroup is not writable: run the container with --privileged, or mount /sys/fs/cgroup read-write (docs/deployment.md)"
	default:
		return "the container lacks a privilege a sandbox needs (CAP_SYS_ADMIN, SETUID, SETGID, CHOWN, FOWNER, DAC_OVERRIDE, SETPCAP, NET_ADMIN), or its seccomp or AppArmor profile refuses namespaces and mounts: run it with --privileged, or see docs/deployment.md for the narrower set"
	}
}
