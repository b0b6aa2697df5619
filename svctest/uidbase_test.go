package svctest_test

import (
	"errors"
	"os"
	"testing"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/svctest"
)

// TestUIDBaseTaken: a range that UIDBase picks but another instance holds
// (a test process whose pid picked the same region) is passed over: New
// takes the next one.
func TestUIDBaseTaken(t *testing.T) {
	svctest.RequireSandbox(t)
	// UIDBase hands out the ranges of a region in turn, from the
	// first again after the 64th: the next one is base+1024 unless base
	// is the region's last.
	base := svctest.UIDBase()
	if (base-4_000_000)/1024%64 == 63 {
		base = svctest.UIDBase()
	}
	svctest.New(t, svc.Config{UIDBase: base + 1024})
	other, err := os.MkdirTemp("", "svctest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(other) })
	if _, err := svc.New(svc.Config{StateDir: other, UIDBase: base + 1024}); !errors.Is(err, svc.ErrHostIDsInUse) {
		t.Fatalf("New on a held range: %v, want ErrHostIDsInUse", err)
	}
	sb := svctest.New(t, svc.Config{})
	if got := sb.Config().UIDBase; got == base+1024 {
		t.Errorf("New took UIDBase %d, which another sandbox holds", got)
	}
}
