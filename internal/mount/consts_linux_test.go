package mount

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestLinuxValues: the plan's own constants are Linux's.
func TestLinuxValues(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"MOUNT_ATTR_RDONLY", ro, unix.MOUNT_ATTR_RDONLY},
		{"MOUNT_ATTR_NOSUID", nosuid, unix.MOUNT_ATTR_NOSUID},
		{"MOUNT_ATTR_NODEV", nodev, unix.MOUNT_ATTR_NODEV},
		{"MOUNT_ATTR_NOEXEC", noexec, unix.MOUNT_ATTR_NOEXEC},
		{"MS_NOSUID", msNosuid, unix.MS_NOSUID},
		{"MS_NODEV", msNodev, unix.MS_NODEV},
		{"MS_NOEXEC", msNoexec, unix.MS_NOEXEC},
		{"MS_REC", msRec, unix.MS_REC},
		{"MS_PRIVATE", msPrivate, unix.MS_PRIVATE},
	} {
		if c.got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, c.got, c.want)
		}
	}
}
