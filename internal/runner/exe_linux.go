package runner

import (
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

var (
	sealOnce sync.Once
	sealed   *os.File
	sealErr  error
)

// sealedExe returns a read-only, sealed in-memory copy of the running
// binary, made once per process. The init of every sandbox executes it:
// nothing inside a sandbox can reach or overwrite the real binary on disk
// (runc's CVE-2019-5736 defence), and the copy is executable by the
// unprivileged sandbox identities whatever the binary's own mode.
func sealedExe() (*os.File, error) {
	sealOnce.Do(func() { sealed, sealErr = sealExe() })
	return sealed, sealErr
}

func sealExe() (*os.File, error) {
	src, err := os.Open("/proc/self/exe")
	if err != nil {
		return nil, fmt.Errorf("seal binary: %w", err)
	}
	defer src.Close()
	// No child this process forks meanwhile may inherit the copy open
	// for writing, which would make its execve fail with ETXTBSY until
	// that child's own execve (Go issue 22315): forks hold ForkLock for
	// writing.
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fd, err := unix.MemfdCreate("svc-init", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("seal binary: memfd_create: %w", err)
	}
	rw := os.NewFile(uintptr(fd), "svc-init")
	defer rw.Close()
	if _, err := io.Copy(rw, src); err != nil {
		return nil, fmt.Errorf("seal binary: copy: %w", err)
	}
	const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		return nil, fmt.Errorf("seal binary: add seals: %w", err)
	}
	// execve refuses a file that is open for writing (ETXTBSY): keep a
	// read-only descriptor and close the writable one.
	ro, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", fd), os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("seal binary: reopen: %w", err)
	}
	return ro, nil
}
