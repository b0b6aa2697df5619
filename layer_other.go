//go:build !linux

package svc

// Other systems run no sandboxes: a request never reaches the cache.

func (*request) snapshot() (*tree, error)                           { return nil, errUnsupported }
func (*request) writeLayer(*layerWriter, []layerEntry, *tree) error { return errUnsupported }
func (*request) applyLayer(*layer, string) error                    { return errUnsupported }
func (*request) reset() error                                       { return errUnsupported }
func (*request) spendOutput(StepResult)                             {}

func policyIdentity(p Profile) string { return string(p) }
