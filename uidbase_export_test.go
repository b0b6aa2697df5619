package svc

// UIDBaseForTest returns a range of host ids of its own for a Sandbox
// (Config.UIDBase), as svctest.UIDBase does. The internal tests cannot
// import svctest, which imports svc: helpers_test.go, of the external test
// package in the same test binary, sets it to svctest.UIDBase.
var UIDBaseForTest func() int
