//go:build !linux

package svc

import (
	"context"
	"errors"
)

// unsupported is the platform of systems other than Linux, and the
// workspace of its requests: none is ever made, and nothing runs.
type unsupported struct{}

var (
	_ platform  = unsupported{}
	_ workspace = unsupported{}
)

var errUnsupported = errors.New("svc runs sandboxes on Linux only")

func openHost(*Config) (platform, error) { return nil, errUnsupported }

func (unsupported) newWorkspace(string, int) (workspace, error) { return nil, errUnsupported }
func (unsupported) prepareWorkspace(context.Context, string, int) (workspace, error) {
	return nil, errUnsupported
}
func (unsupported) expectFirst(Profile) {}
func (unsupported) background(f func()) { f() }
func (unsupported) goCache() *goCache   { return nil }
func (unsupported) cgroupVersion() int  { return 0 }
func (unsupported) startCheck() error   { return errUnsupported }
func (unsupported) drain() error        { return nil }
func (unsupported) close() error        { return nil }
func (unsupported) buildGoCache(context.Context, string, int, string) (*Result, error) {
	return nil, errUnsupported
}

func (unsupported) identity() int                       { return 0 }
func (unsupported) lacksGoCache() bool                  { return false }
func (unsupported) prepare(context.Context, []taskPlan) {}
func (unsupported) runStep(context.Context, *stepPlan, storedFiles) (StepResult, error) {
	return StepResult{}, errUnsupported
}
func (unsupported) snapshot() (*tree, error)                           { return nil, errUnsupported }
func (unsupported) writeLayer(*layerWriter, []layerEntry, *tree) error { return errUnsupported }
func (unsupported) applyLayer(*layer, string) error                    { return errUnsupported }
func (unsupported) openOutput(string) (outputReader, int64, error)     { return nil, 0, errUnsupported }
func (unsupported) spendOutput(StepResult)                             {}
func (unsupported) reset() error                                       { return errUnsupported }
func (unsupported) discardCells()                                      {}

// policyIdentity names a profile's policy for cache keys: its name alone,
// where no filter is compiled.
func policyIdentity(p Profile) string { return string(p) }
