//go:build !linux

package svc

import (
	"context"
	"errors"
)

// host is the Linux machinery; other systems have none.
type host struct{}

type request struct{ slot int }

var errUnsupported = errors.New("svc runs sandboxes on Linux only")

func openHost(*Config) (*host, error) { return nil, errUnsupported }

func (*host) close() error { return nil }

func (*host) newRequest(string, int) (*request, error) { return nil, errUnsupported }

func (*host) prepare(context.Context, string, int) (*request, error) { return nil, errUnsupported }

func (*host) background(f func()) { f() }

func (*request) close() error { return nil }

func (*request) lacksGoCache() bool { return false }

func (*request) discardCells() {}

func (*request) prepare(context.Context, []Task) {}

func (*host) expectFirst(Profile) {}

func (*host) goCache() *goCache { return nil }

func (*host) buildGoCache(context.Context, string, int, string) (*Result, error) {
	return nil, errUnsupported
}

func (*request) runStep(context.Context, Step, storedFiles) (StepResult, error) {
	return StepResult{}, errUnsupported
}
