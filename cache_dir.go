package svc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// dirCache is the dir:// store: a directory that the instances on one host,
// or on a shared volume, use together.
//
// # On disk
//
//	<root>/<namespace>/<kk>/<key>   a layer blob; kk is the key's first two
//	                                hex digits
//	<root>/<namespace>/.tmp-*       blobs being written
//
// A blob is written to a temporary file and renamed into place, so a
// reader sees a whole blob or none, and writers of the same key (the same
// layer, give or take the original run's statistics) replace each other
// harmlessly. A reader keeps reading the blob it opened when it is
// replaced or removed. Nothing is fsynced: a blob a crash damaged fails
// its digest and is removed on use.
//
// A layer's modification time is its last use (stored or replayed), on the
// cache's clock. A layer whose last use is TTL or more ago has expired: a
// lookup removes it, and so does a sweep every TTL/10 (between a second
// and a minute). When a store takes the directory (every namespace)
// over MaxBytes, the layers used least recently are removed until it is
// at 90% of MaxBytes. Each instance keeps the directory's size as of its
// last scan plus what it stored since; instances sharing the directory
// correct each other's view at their next scan.
type dirCache struct {
	root     string
	dir      string // root/namespace
	ttl      time.Duration
	maxBytes int64
	now      func() time.Time
	log      *slog.Logger

	stop      chan struct{} // closed by close; ends the sweep
	swept     chan struct{} // closed when the sweep has ended
	evicting  atomic.Bool
	closeOnce sync.Once

	mu   sync.Mutex // guards used
	used int64      // bytes of the layers under root, as far as known
}

const (
	dirTmpPrefix = ".tmp-"
	// dirTmpStale is the age of a temporary file that no writer can
	// still be writing.
	dirTmpStale = time.Hour
)

func openDirCache(root, ns string, ttl time.Duration, maxBytes int64, now func() time.Time, log *slog.Logger) (*dirCache, error) {
	root = filepath.Clean(root)
	d := &dirCache{
		root: root, dir: filepath.Join(root, ns), ttl: ttl, maxBytes: maxBytes, now: now, log: log,
		stop: make(chan struct{}), swept: make(chan struct{}),
	}
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return nil, err
	}
	if _, err := d.scan(); err != nil {
		return nil, err
	}
	go sweepEvery(sweepPeriod(ttl), d.stop, d.swept, func() {
		if _, err := d.scan(); err != nil {
			d.log.Warn("step cache: sweep", "err", err)
		}
	})
	return d, nil
}

func (d *dirCache) path(key string) string { return filepath.Join(d.dir, key[:2], key) }

// validKey reports whether key can name a file: 64 lowercase hex digits.
func validKey(key string) bool { return isFileIDHex(key) }

func (d *dirCache) expired(lastUse time.Time) bool { return !d.now().Before(lastUse.Add(d.ttl)) }

func (d *dirCache) get(_ context.Context, key string) (cacheBlob, error) {
	if !validKey(key) {
		return nil, fmt.Errorf("bad key %q", key)
	}
	p := d.path(key)
	f, err := os.OpenFile(p, os.O_RDONLY|nofollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errCacheMiss
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	if d.expired(fi.ModTime()) {
		f.Close()
		d.removeIfSame(p, fi)
		return nil, errCacheMiss
	}
	now := d.now()
	if err := os.Chtimes(p, now, now); err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.log.Warn("step cache: record a layer's use", "key", key, "err", err)
	}
	return fileBlob{f, fi.Size()}, nil
}

// removeIfSame removes the file at p if it is still the one fi describes
// (another instance may have stored a fresh one meanwhile).
func (d *dirCache) removeIfSame(p string, fi os.FileInfo) {
	cur, err := os.Lstat(p)
	if err != nil || !os.SameFile(cur, fi) {
		return
	}
	if err := os.Remove(p); err == nil {
		d.addUsed(-fi.Size())
	}
}

type fileBlob struct {
	*os.File
	size int64
}

func (b fileBlob) Size() int64 { return b.size }

func (d *dirCache) create(_ context.Context, key string) (cacheSink, error) {
	if !validKey(key) {
		return nil, fmt.Errorf("bad key %q", key)
	}
	f, err := os.CreateTemp(d.dir, dirTmpPrefix+"*")
	if err != nil {
		return nil, err
	}
	return &dirSink{d: d, f: f, key: key}, nil
}

type dirSink struct {
	d    *dirCache
	f    *os.File
	key  string
	done bool
}

func (s *dirSink) Write(p []byte) (int, error) { return s.f.Write(p) }

func (s *dirSink) commit(_ context.Context, size int64) error {
	d := s.d
	if size > d.maxBytes/10*9 {
		// It would evict everything, itself too.
		return errLayerTooLarge
	}
	if err := s.f.Close(); err != nil {
		return err
	}
	now := d.now()
	if err := os.Chtimes(s.f.Name(), now, now); err != nil {
		return err
	}
	p := d.path(s.key)
	if err := os.Mkdir(filepath.Dir(p), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := os.Rename(s.f.Name(), p); err != nil {
		return err
	}
	s.done = true
	if d.addUsed(size) > d.maxBytes && d.evicting.CompareAndSwap(false, true) {
		defer d.evicting.Store(false)
		d.evict()
	}
	return nil
}

func (s *dirSink) abort() {
	if !s.done {
		s.f.Close()
		os.Remove(s.f.Name())
		s.done = true
	}
}

func (d *dirCache) addUsed(n int64) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.used = max(0, d.used+n)
	return d.used
}

func (d *dirCache) remove(_ context.Context, key string) error {
	if !validKey(key) {
		return fmt.Errorf("bad key %q", key)
	}
	p := d.path(key)
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	d.addUsed(-fi.Size())
	return nil
}

// drop removes every layer of the namespace; temporaries being written
// are left to their writers.
func (d *dirCache) drop(ctx context.Context) (int, error) {
	n := 0
	layers, err := d.list(d.dir)
	for _, l := range layers {
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		if err := os.Remove(l.path); err == nil {
			n++
			d.addUsed(-l.size)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return n, err
		}
	}
	return n, err
}

// storedLayer is a layer file found by a scan.
type storedLayer struct {
	path    string
	size    int64
	lastUse time.Time
}

// list returns the layers of the namespace directory dir. Entries that are
// not layers are skipped.
func (d *dirCache) list(dir string) ([]storedLayer, error) {
	subs, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []storedLayer
	for _, sub := range subs {
		if !sub.IsDir() || len(sub.Name()) != 2 {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(dir, sub.Name()))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return out, err
		}
		for _, e := range entries {
			if !validKey(e.Name()) || !strings.HasPrefix(e.Name(), sub.Name()) {
				continue
			}
			fi, err := e.Info()
			if err != nil || !fi.Mode().IsRegular() {
				continue // removed meanwhile
			}
			out = append(out, storedLayer{filepath.Join(dir, sub.Name(), e.Name()), fi.Size(), fi.ModTime()})
		}
	}
	return out, nil
}

// scan removes the expired layers and stale temporaries of the namespace
// and returns every layer of the directory (all namespaces), setting the
// known size from them.
func (d *dirCache) scan() ([]storedLayer, error) {
	if tmps, err := filepath.Glob(filepath.Join(d.dir, dirTmpPrefix+"*")); err == nil {
		for _, p := range tmps {
			if fi, err := os.Lstat(p); err == nil && d.now().Sub(fi.ModTime()) > dirTmpStale {
				os.Remove(p)
			}
		}
	}
	nss, err := os.ReadDir(d.root)
	if err != nil {
		return nil, err
	}
	var all []storedLayer
	expired := 0
	for _, ns := range nss {
		if !ns.IsDir() {
			continue
		}
		dir := filepath.Join(d.root, ns.Name())
		layers, err := d.list(dir)
		if err != nil {
			return nil, err
		}
		for _, l := range layers {
			// Only this namespace's: others may keep theirs longer.
			if dir == d.dir && d.expired(l.lastUse) {
				if os.Remove(l.path) == nil {
					expired++
				}
				continue
			}
			all = append(all, l)
		}
	}
	var used int64
	for _, l := range all {
		used += l.size
	}
	d.mu.Lock()
	d.used = used
	d.mu.Unlock()
	if expired > 0 {
		d.log.Info("step cache: removed expired layers", "namespace", filepath.Base(d.dir), "count", expired)
	}
	return all, nil
}

// evict removes the layers used least recently, of any namespace, until
// the directory is at 90% of MaxBytes.
func (d *dirCache) evict() {
	all, err := d.scan()
	if err != nil {
		d.log.Warn("step cache: scan for eviction", "err", err)
		return
	}
	var used int64
	for _, l := range all {
		used += l.size
	}
	target := d.maxBytes / 10 * 9
	if used <= d.maxBytes {
		return
	}
	slices.SortFunc(all, func(a, b storedLayer) int { return a.lastUse.Compare(b.lastUse) })
	n := 0
	for _, l := range all {
		if used <= target {
			break
		}
		if err := os.Remove(l.path); err == nil || errors.Is(err, fs.ErrNotExist) {
			used -= l.size
			n++
		}
	}
	d.mu.Lock()
	d.used = used
	d.mu.Unlock()
	d.log.Info("step cache: evicted the layers used least recently", "count", n, "bytes", used, "max_bytes", d.maxBytes)
}

func (d *dirCache) close() error {
	d.closeOnce.Do(func() {
		close(d.stop)
		<-d.swept
	})
	return nil
}
