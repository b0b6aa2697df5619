// Package conformance holds the differential conformance suite: real
// programs (cases/<lang>/<name>/), each run on the host and in a svc
// sandbox under every profile it fits, with the results compared. The
// suite is its test, TestConformance; README.md specifies the case format.
package conformance
