//go:build !linux

package svc

// hostIDLock is nothing off Linux, where no sandbox runs (New fails
// before it takes one).
type hostIDLock struct{}

func lockHostIDs(string, int, int, string) (*hostIDLock, error) { return nil, errUnsupported }

func (*hostIDLock) release() error { return nil }
