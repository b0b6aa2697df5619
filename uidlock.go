package svc

import (
	"errors"
	"strconv"
	"strings"
)

// hostIDLockDir holds a lock file for each range of host ids a Sandbox
// on this host runs sandboxes as (Config.UIDBase). It is host-wide, not in
// the state dir: instances with different state dirs must see each
// other's ranges.
//
// Each file is named "<first>-<end>", the range [first, end), and reads
//
//	pid 1234
//	state_dir /var/lib/svc
//
// its holder's process id (in the holder's PID namespace) and state dir.
// The holder keeps an exclusive flock on it for the Sandbox's lifetime;
// the kernel drops that flock when the process dies, so a file whose
// flock can be taken is stale and is replaced. Checking for an overlap
// and creating the file happen under an exclusive flock of the directory
// itself, so two instances starting at once cannot both take overlapping
// ranges.
const hostIDLockDir = "/run/svc/uids"

// ErrHostIDsInUse is the cause (errors.Is) of the error New returns when
// another Sandbox, of this process or another on the host, holds host ids
// that overlap the range of Config.UIDBase the new one would use.
var ErrHostIDsInUse = errors.New("host ids in use by another instance")

// parseIDRange parses a lock file's name, "<first>-<end>", with first <
// end.
func parseIDRange(name string) (first, end int, ok bool) {
	a, b, ok := strings.Cut(name, "-")
	if !ok {
		return 0, 0, false
	}
	first, err1 := strconv.Atoi(a)
	end, err2 := strconv.Atoi(b)
	return first, end, err1 == nil && err2 == nil && first >= 0 && first < end
}
