//go:build !linux

package svc

import (
	"context"
	"errors"
)

// host is the Linux machinery; other systems have none.
type host struct{}

type request struct{}

var errUnsupported = errors.New("svc runs sandboxes on Linux only")

func openHost(*Config) (*host, error) { return nil, errUnsupported }

func (*host) close() error { return nil }

func (*host) newRequest(string, int, int) (*request, error) { return nil, errUnsupported }

func (*request) close() error { return nil }

func (*request) runStep(context.Context, Step, storedFiles) (StepResult, error) {
	return StepResult{}, errUnsupported
}
