//go:build !linux

package svc

import (
	"context"
	"errors"
)

// host is the Linux machinery; other systems have none.
type host struct{}

type request struct{}

func openHost(*Config) (*host, error) {
	return nil, errors.New("svc runs sandboxes on Linux only")
}

func (*host) close() error { return nil }

func (*host) newRequest(string, int, int) (*request, error) {
	return nil, errors.New("svc runs sandboxes on Linux only")
}

func (*request) close() error { return nil }

func (*request) runStep(context.Context, Step, storedFiles) (StepResult, error) {
	return StepResult{}, errors.New("svc runs sandboxes on Linux only")
}
