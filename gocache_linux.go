package svc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/svc-sandbox/svc/internal/mount"
)

// goCacheDir is the tasks' Go build cache, the GOCACHE of the go.env
// sandboxes see when the cache is prepared: in /tmp, out of the
// workspace (and of the step cache's layers).
const goCacheDir = "/tmp/.gocache"

// goEnvFile writes, in runDir, the go.env that sandboxes see over the
// root filesystem's /usr/local/go/go.env: its own lines, GOCACHE set to
// goCacheDir. go reads it for the default of every setting, so a task's
// own GOCACHE (in its env, or in $HOME/.config/go/env) still wins, and
// the task's environment stays the fixed one. It returns "" when the
// root filesystem has no Go there.
func goEnvFile(rootfs, runDir string) (string, error) {
	own := filepath.Join(rootfs, mount.GoEnvPath)
	if fi, err := os.Stat(filepath.Join(rootfs, "usr/local/go/bin/go")); err != nil || !fi.Mode().IsRegular() {
		return "", nil
	}
	b, err := os.ReadFile(own)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil // a Go older than 1.21 reads no go.env
	}
	if err != nil {
		return "", fmt.Errorf("go.env of the sandboxes: %w", err)
	}
	// The bind goes where the path leads inside the sandbox's root: a
	// symlink on the way would lead elsewhere.
	if real, err := filepath.EvalSymlinks(own); err != nil || real != filepath.Clean(own) {
		return "", fmt.Errorf("go.env of the sandboxes: %s is reached through a symbolic link", own)
	}
	var out bytes.Buffer
	for line := range strings.Lines(string(b)) {
		if !strings.HasPrefix(line, "GOCACHE=") {
			out.WriteString(line)
		}
	}
	if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
		out.WriteByte('\n')
	}
	out.WriteString("\n# svc: the build cache, a private copy of the standard library's compiled in advance.\nGOCACHE=" + goCacheDir + "\n")
	file := filepath.Join(runDir, ".goenv")
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("go.env of the sandboxes: %w", err)
	}
	return file, nil
}

// openGoCache returns the state of the Go build cache of cfg, nil when
// none is prepared: GoBuildCache is empty, or the sandboxes see no Go
// (goEnv is "").
func openGoCache(cfg *Config, goEnv string) (*goCache, error) {
	if cfg.GoBuildCache == "" || goEnv == "" {
		return nil, nil
	}
	// The overlay's options name the directory.
	if strings.ContainsAny(cfg.GoBuildCache, ":,\\") {
		return nil, fmt.Errorf("config: GoBuildCache %q: an overlay cannot name a path with ':', ',' or '\\'", cfg.GoBuildCache)
	}
	// Only root goes in: the prepared caches are reached by the tasks
	// through their overlays alone.
	if err := os.MkdirAll(cfg.GoBuildCache, 0o700); err != nil {
		return nil, fmt.Errorf("go build cache: %w", err)
	}
	if err := os.Chmod(cfg.GoBuildCache, 0o700); err != nil {
		return nil, fmt.Errorf("go build cache: %w", err)
	}
	return newGoCache(filepath.Join(cfg.GoBuildCache, goCacheName(cfg.ImageID))), nil
}

// goCache returns the state of the prepared Go build cache, nil for none.
func (h *host) goCache() *goCache { return h.gocache }

// goCacheLower returns the prepared Go build cache, "" while there is
// none.
func (h *host) goCacheLower() string { return h.gocache.lower() }

// buildGoCache prepares the Go build cache in dir: a request of its own
// on identity slot slot, with the limits of goCacheLimits, runs
// goCacheCmd with the environment of every task, and its /tmp/.gocache is
// copied to a temporary directory beside dir, then renamed to dir. It
// returns the task's result, or nil when another instance sharing the
// directory prepared it meanwhile.
func (h *host) buildGoCache(ctx context.Context, id string, slot int, dir string) (*Result, error) {
	parent := filepath.Dir(dir)
	lock, err := lockGoCaches(ctx, parent)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil, nil
	}
	// What an interrupted build left: no other builds, under the lock.
	if old, err := filepath.Glob(filepath.Join(parent, ".tmp-*")); err == nil {
		for _, d := range old {
			if err := os.RemoveAll(d); err != nil {
				return nil, fmt.Errorf("go build cache: %w", err)
			}
		}
	}
	r, err := h.runGoCacheBuild(ctx, id, slot, parent, dir)
	return &r, err
}

// lockGoCaches takes the lock of the directory of prepared caches, which
// its builds hold, waiting while another instance sharing it builds.
func lockGoCaches(ctx context.Context, parent string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(parent, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("go build cache: %w", err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("go build cache: lock %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// runGoCacheBuild is buildGoCache's build, under the lock.
func (h *host) runGoCacheBuild(ctx context.Context, id string, slot int, parent, dir string) (Result, error) {
	rq, err := h.openRequest(&request{id: id, slot: slot, limits: goCacheLimits(h.cfg.Limits), size: goCacheSize, own: true})
	if err != nil {
		return Result{}, err
	}
	defer func() {
		if err := rq.close(); err != nil {
			h.cfg.Logger.Error("go build cache: cleanup", "err", err)
		}
	}()
	profile := ProfileCompileV2
	if _, ok := h.filters[profile]; !ok {
		profile = ProfileCompileV1
		if _, ok := h.filters[profile]; !ok {
			return Result{}, errors.New("go build cache: neither compile_v2 nor compile_v1 is an allowed profile, and go runs under no other")
		}
	}
	task := resolveTask(&Task{Cmd: goCacheCmd[0], Args: goCacheCmd[1:], SandboxProfile: profile}, profile, rq.limits)
	r, err := rq.runTask(ctx, &task, false)
	if err != nil {
		return r, fmt.Errorf("go build cache: %w", err)
	}
	if r.Outcome != OutcomeExited || r.ExitCode != 0 {
		return r, fmt.Errorf("go build cache: %s: %s, exit %d: %s", strings.Join(goCacheCmd, " "), r.Outcome, r.ExitCode, clipOutput(r.Stderr+r.Error))
	}
	tmp, err := os.MkdirTemp(parent, ".tmp-")
	if err != nil {
		return r, fmt.Errorf("go build cache: %w", err)
	}
	if err := copyGoCache(ctx, filepath.Join(rq.tmp, filepath.Base(goCacheDir)), tmp); err != nil {
		return r, errors.Join(fmt.Errorf("go build cache: %w", err), os.RemoveAll(tmp))
	}
	// On disk before it has its name: a crash leaves the whole cache or
	// none.
	if err := syncFS(tmp); err != nil {
		return r, errors.Join(fmt.Errorf("go build cache: %w", err), os.RemoveAll(tmp))
	}
	if err := os.Rename(tmp, dir); err != nil {
		return r, errors.Join(fmt.Errorf("go build cache: %w", err), os.RemoveAll(tmp))
	}
	return r, nil
}

// syncFS writes the filesystem of dir to disk.
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}

// clipOutput shortens a task's output for an error message.
func clipOutput(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

// copyGoCache copies the Go build cache src, which a task wrote, to dst,
// an empty directory: directories and regular files only, never through
// a symbolic link. Every directory is world-writable and every file
// world-readable and -writable, so that any task may add entries and
// change its copy of any (the overlay copies a file up before a write),
// and every file's times are goCacheMtime.
func copyGoCache(ctx context.Context, src, dst string) error {
	root, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := os.Chmod(dst, 0o755); err != nil {
		return err
	}
	return fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		to := filepath.Join(dst, p)
		switch {
		case p == ".":
			return nil
		case d.IsDir():
			if err := os.Mkdir(to, 0o777); err != nil {
				return err
			}
			return os.Chmod(to, 0o777) // past the umask
		case !d.Type().IsRegular():
			return nil
		}
		in, err := root.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, in)
		if err == nil {
			err = out.Chmod(0o666)
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		return os.Chtimes(to, goCacheMtime, goCacheMtime)
	})
}

// The directories of a request's Go build cache overlay in its tmpfs,
// beside its workspace and /tmp: out of its tasks' reach.
const (
	goUpper = ".go-upper"
	goWork  = ".go-work"
)

// mountGoCache mounts on the request's /tmp/.gocache an overlay whose
// lower layer is the prepared Go build cache, and whose upper layer,
// owned by the request's task identity, is in the request's tmpfs: each
// request sees the cache as its own, writable, and what its tasks write
// counts against its workspace size. The upper layer holds a fresh
// trim.txt, so that go does not walk the whole cache to trim it (once a
// day, in every request, as the prepared one's ages).
func (rq *request) mountGoCache(lower string) error {
	upper, work := filepath.Join(rq.dir, goUpper), filepath.Join(rq.dir, goWork)
	at := filepath.Join(rq.tmp, filepath.Base(goCacheDir))
	for _, d := range []string{upper, work, at} {
		if err := unix.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("go build cache %s: %w", d, err)
		}
	}
	for _, d := range []string{upper, at} {
		if err := unix.Chown(d, rq.taskUID, rq.taskUID); err != nil {
			return fmt.Errorf("go build cache %s: %w", d, err)
		}
	}
	trim := filepath.Join(upper, "trim.txt")
	if err := os.WriteFile(trim, strconv.AppendInt(nil, time.Now().Unix(), 10), 0o644); err != nil {
		return fmt.Errorf("go build cache: %w", err)
	}
	if err := unix.Chown(trim, rq.taskUID, rq.taskUID); err != nil {
		return fmt.Errorf("go build cache: %w", err)
	}
	data := "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work
	if err := unix.Mount("svc-gocache", at, "overlay", unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		return fmt.Errorf("go build cache: mount overlay on %s: %w", at, err)
	}
	rq.goLower = lower
	return nil
}

// lacksGoCache reports whether the request has no Go build cache while
// one is ready: it was prepared before.
func (rq *request) lacksGoCache() bool {
	return rq.goLower == "" && rq.h.goCacheLower() != ""
}

// unmountGoCache removes the request's Go build cache overlay and its
// layers, if it has one.
func (rq *request) unmountGoCache() error {
	if rq.goLower == "" {
		return nil
	}
	at := filepath.Join(rq.tmp, filepath.Base(goCacheDir))
	if err := unix.Unmount(at, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("go build cache: unmount %s: %w", at, err)
	}
	rq.goLower = ""
	return errors.Join(os.RemoveAll(filepath.Join(rq.dir, goUpper)), os.RemoveAll(filepath.Join(rq.dir, goWork)), os.Remove(at))
}
