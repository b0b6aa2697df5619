package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// versionCmd is svc version (and svc --version): versionLine.
func versionCmd(args []string, stdout io.Writer) error {
	if len(args) != 0 {
		return fmt.Errorf("version: unexpected arguments %q", args)
	}
	_, err := fmt.Fprintln(stdout, versionLine())
	return err
}

// versionLine says which svc this is, from the build information the Go
// toolchain records in the binary: the module version (version, as /info
// reports it), then the Go version and platform, and the commit it was
// built from with its time and "modified" for a checkout with changes,
// where the build recorded them (go build in a git checkout does; go run
// and a build with -buildvcs=false do not).
//
//	svc v0.0.0-20261129013745-0a182af6b2d1+dirty (go1.26.0 linux/amd64, commit 0a182af6b2d1, 2026-11-29T01:37:45Z, modified)
func versionLine() string {
	parts := []string{runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		vcs := map[string]string{}
		for _, s := range bi.Settings {
			vcs[s.Key] = s.Value
		}
		if rev := vcs["vcs.revision"]; rev != "" {
			parts = append(parts, "commit "+rev[:min(len(rev), 12)])
		}
		if t := vcs["vcs.time"]; t != "" {
			parts = append(parts, t)
		}
		if vcs["vcs.modified"] == "true" {
			parts = append(parts, "modified")
		}
	}
	return "svc " + version() + " (" + strings.Join(parts, ", ") + ")"
}
