package svc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// FileStoreConfig configures a [FileStore]. Dir is required; every other
// zero field takes the default documented on it (the defaults of API.md).
type FileStoreConfig struct {
	// Dir holds the stored files. It is created if missing (mode 0700).
	// The server defaults it to <state dir>/files. With a URL, it is this
	// process's read-through cache of the shared store.
	Dir string
	// URL, if set, names a store of the files shared by several
	// instances (FILESTORE_URL); empty, Dir is the store:
	//
	//	s3://bucket/prefix?endpoint=host:port&region=name
	//
	// an S3-compatible object store (filestore_s3.go). endpoint is
	// host:port for HTTPS, or http://host:port; other parameters:
	// virtual_host=true (bucket in the host name; default path-style),
	// credentials_file and profile (an AWS shared credentials file; the
	// environment's AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY come
	// first), cache_bytes (the bound of the cache in Dir, default
	// MaxBytes; a size such as 512MiB), timeout_ms (each call to the
	// store; default 2000, and a transfer gets 1 s more per 8 MiB).
	// MaxBytes and TTL then hold for the whole store, approximately: see
	// [FileStore], "Shared by a fleet".
	URL string
	// MaxBytes bounds the total size of the stored files
	// (FILESTORE_MAX_BYTES). Default 4 GiB.
	MaxBytes int64
	// TTL is how long a file is kept after its last upload or use
	// (FILE_TTL_SECS). Default 24 hours.
	TTL time.Duration
	// MaxUploadBytes bounds one upload (UPLOAD_FILE_LIMIT_BYTES).
	// Default 64 MiB.
	MaxUploadBytes int64
	// MaxConcurrentUploads bounds the uploads in progress at once
	// (MAX_CONCURRENT_UPLOADS). Default 8.
	MaxConcurrentUploads int
	// Now is the clock of creation and expiry times; nil is time.Now.
	// Tests inject a fake clock here.
	Now func() time.Time
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
}

// StoredFile describes a stored file: the list entry of spec 2.8.
// CreatedAt is encoded as an RFC 3339 timestamp in UTC.
type StoredFile struct {
	// ID is the lowercase hex SHA-256 of the content.
	ID string `json:"id"`
	// Filename and ContentType are those of the first upload of the
	// content; nil when it had none.
	Filename    *string   `json:"filename"`
	ContentType *string   `json:"content_type"`
	Size        int64     `json:"size"`
	CreatedAt   time.Time `json:"created_at"`
}

// MarshalJSON encodes the entry with CreatedAt in UTC.
func (f StoredFile) MarshalJSON() ([]byte, error) {
	type plain StoredFile
	p := plain(f)
	p.CreatedAt = p.CreatedAt.UTC()
	return json.Marshal(p)
}

// ValidFileID reports whether id has the form of a file id: exactly 64
// lowercase hex characters.
func ValidFileID(id string) bool { return isFileIDHex(id) }

// FileStore is a content-addressed store of uploaded files, kept on disk
// under FileStoreConfig.Dir so that it survives restarts. Tasks refer to a
// stored file by its id, the lowercase hex SHA-256 of its content
// (Task.Files: File{FileID: id}); see [Config].Files.
//
// # On disk
//
// Each file is two entries of Dir: <id>, the content, and <id>.json, its
// [StoredFile] metadata. An upload is written to a temporary file
// (.tmp-*) as it arrives, hashed on the way, fsynced, and renamed into
// place only when complete: the metadata first, then the content, each
// rename made durable by an fsync of Dir. The content's rename is the
// commit point, so a crash at any moment leaves the whole file or nothing:
// [OpenFileStore] removes temporaries and metadata without content. The
// time of a file's last use is kept as the content's access time, so
// expiry survives restarts too. Dir is locked (flock on Dir/.lock) while a
// FileStore has it open.
//
// # Expiry and integrity
//
// A file expires TTL after its last upload or use ([FileStore.Open]); an
// expired file is not_found at once, and a background sweep removes it
// from disk. [FileStore.Open] hashes the content before handing it out
// and remembers the file it verified (inode, size, modification time), so
// repeated use does not rehash; a file whose bytes no longer hash to its
// id is removed and reported not_found.
//
// # Shared by a fleet
//
// With FileStoreConfig.URL the files live in an object store that every
// instance of a fleet reads and writes, and Dir is only this instance's
// cache of them, bounded by cache_bytes (least recently used files go
// first). The contract is the same, fleet-wide, with these bounds:
//
//   - An upload is spooled to Dir and hashed as it arrives. One of up to
//     a part (8 MiB, or UPLOAD_FILE_LIMIT_BYTES/10000 if larger) is
//     written under its id only then, whole, by one PUT that does not
//     replace an object that exists. A larger one is sent in parts while
//     it arrives, two at a time, to a staged object that nothing refers
//     to; once it is hashed, a small object under its id, written the
//     same way, refers to it. An upload cut anywhere (client gone,
//     instance killed, store down) leaves nothing any instance serves:
//     the instance removes what it staged, and what a killed instance
//     staged is removed by the tidy any instance runs every quarter of
//     max(TTL, 1 hour), of content staged longer ago than that. The spool is
//     removed, and so is any a crash left, at the next start. A 201 is
//     sent once the object store has the file: every instance then
//     finds it.
//   - Open serves the cached copy while the store confirmed the file
//     within the last second; after that it asks the store again (one
//     HEAD), so a DELETE through any instance is seen by every other one
//     within a second. Content fetched from the store is hashed on
//     arrival: an object that does not hash to its id is removed, never
//     served.
//   - The time of last use is the object's Last-Modified, renewed (a
//     server-side copy onto itself) by a use at least TTL/10 after the
//     last renewal: a file is kept between TTL and 1.1 x TTL after its
//     last use anywhere.
//   - MaxBytes bounds the objects of the store, as counted by the last
//     listing (every sweep period, a tenth of the TTL between 1 s and a
//     minute, and again before refusing an upload) plus this instance's
//     own uploads since: instances uploading at the same moment can
//     overshoot it by what they upload between two listings.
//   - Each call to the store has a deadline (timeout_ms; a transfer 1 s
//     more per 8 MiB), and a failure opens a circuit breaker
//     (cache_breaker.go): while the store is failing, an upload is
//     refused at once with capacity_exhausted (503, try again), and Open
//     serves the files this instance has cached; the others are
//     capacity_exhausted too. The first call after the back-off probes
//     the store, and everything works again once it answers.
//
// # Concurrency
//
// A FileStore is safe for concurrent use. Uploads of the same bytes at the
// same time store one file: one of them reports alreadyExists false, the
// others true. Errors are [*Error] values with a client-safe Msg.
type FileStore struct {
	dir     string
	maxSize int64
	ttl     time.Duration
	maxPut  int64
	now     func() time.Time
	log     *slog.Logger
	lock    *os.File // holds the flock of Dir/.lock

	uploads chan struct{} // one token per upload in progress

	stop      chan struct{} // closed by Close; ends the sweep and uploads
	swept     chan struct{} // closed when the sweep has ended
	putting   sync.WaitGroup
	closeOnce sync.Once

	// hashed counts the verifications Open made by hashing (for tests).
	hashed atomic.Int64

	// The shared store, when FileStoreConfig.URL names one: Dir is then
	// a cache of it, and maxSize the cache's bound.
	remote   fileObjects // nil: Dir is the store
	kind     string      // "dir" or "s3"
	guard    storeGuard  // of remote (cache_breaker.go)
	errs     atomic.Uint64
	timeout  time.Duration // of each call to remote
	fresh    time.Duration // how long a confirmation by remote holds
	fleetMax int64         // MaxBytes: the bound of remote
	fetches  atomic.Int64  // contents fetched from remote (for tests and metrics)

	mu sync.Mutex // guards the fields below and every storedEntry
	// files are the stored files by id, expired ones included until they
	// are removed.
	files map[string]*storedEntry
	// pending are the ids being renamed into place by an upload; the
	// channel is closed when it is done (stored or failed).
	pending  map[string]chan struct{}
	used     int64 // bytes of files
	reserved int64 // bytes written so far by uploads in progress
	closed   bool
	// fleetUsed and fleetFiles are what remote holds: its last listing
	// plus the changes made here since.
	fleetUsed  int64
	fleetFiles int
	// sinceList are the changes made here since the listing in
	// progress began, which it may not have seen.
	sinceListUsed  int64
	sinceListFiles int
	// metas are the entries of files of remote seen here, by id: a
	// file's metadata never changes, and List needs it.
	metas map[string]StoredFile
	// tidied is when remote was last tidied of staged content.
	tidied time.Time
}

// storedEntry is the index entry of a stored file; guarded by FileStore.mu.
type storedEntry struct {
	info    StoredFile
	lastUse time.Time
	// verified is the content file as Open last verified it; nil until
	// then. A file with the same identity, size and mtime is not rehashed.
	verified os.FileInfo
	// confirmed is when the shared store last said it holds the file
	// (with a URL only).
	confirmed time.Time
}

// Names in Dir besides <id> and <id>.json.
const (
	storeTmpPrefix = ".tmp-"
	storeLockName  = ".lock"
	storeMetaExt   = ".json"
)

// testHookPut, when set, is called at each stage of an upload's commit:
// "synced" (the temporary is complete and fsynced), "meta" (the metadata
// is in place), "content" (the content is in place). A test sets it to
// kill the process there and see what a crash leaves.
var testHookPut func(stage string)

// OpenFileStore opens (creating if needed) the store in cfg.Dir: it removes
// the temporaries of uploads a crash interrupted, loads the index from the
// metadata files, drops what has expired, and starts the background expiry
// sweep. Close stops it.
func OpenFileStore(cfg FileStoreConfig) (*FileStore, error) {
	if cfg.Dir == "" {
		return nil, errors.New("file store: Dir is required")
	}
	switch {
	case cfg.MaxBytes < 0:
		return nil, fmt.Errorf("file store: MaxBytes must not be negative, got %d", cfg.MaxBytes)
	case cfg.TTL < 0:
		return nil, fmt.Errorf("file store: TTL must not be negative, got %v", cfg.TTL)
	case cfg.MaxUploadBytes < 0:
		return nil, fmt.Errorf("file store: MaxUploadBytes must not be negative, got %d", cfg.MaxUploadBytes)
	case cfg.MaxConcurrentUploads < 0:
		return nil, fmt.Errorf("file store: MaxConcurrentUploads must not be negative, got %d", cfg.MaxConcurrentUploads)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("file store: Dir: %w", err)
	}
	s := &FileStore{
		dir:     dir,
		maxSize: orDefault(cfg.MaxBytes, 4*GiB),
		ttl:     orDefault(cfg.TTL, 24*time.Hour),
		maxPut:  orDefault(cfg.MaxUploadBytes, 64*MiB),
		now:     cfg.Now,
		log:     cfg.Logger,
		uploads: make(chan struct{}, orDefault(cfg.MaxConcurrentUploads, 8)),
		stop:    make(chan struct{}),
		swept:   make(chan struct{}),
		files:   make(map[string]*storedEntry),
		pending: make(map[string]chan struct{}),
		kind:    "dir",
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.URL != "" {
		if err := s.openRemote(cfg.URL); err != nil {
			return nil, fmt.Errorf("file store: URL: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("file store: %w", err)
	}
	if s.lock, err = lockDir(filepath.Join(dir, storeLockName)); err != nil {
		return nil, fmt.Errorf("file store: %s is in use by another file store: %w", dir, err)
	}
	if err := s.load(); err != nil {
		s.lock.Close()
		return nil, fmt.Errorf("file store: %w", err)
	}
	s.sweepExpired()
	sweep := s.sweepExpired
	if s.remote != nil {
		s.evict("")
		sweep = func() {
			s.sweepExpired()
			s.sweepRemote(context.Background())
		}
		// The first listing, in the background: a store that is down at
		// start is the breaker's business, not a reason not to start.
		go s.sweepRemote(context.Background())
	}
	go sweepEvery(sweepPeriod(s.ttl), s.stop, s.swept, sweep)
	return s, nil
}

// orDefault returns v, or def when v is zero.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// load sweeps temporaries and builds the index from Dir.
func (s *FileStore) load() error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	var contents []string
	metas := make(map[string]bool)
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == storeLockName:
		case strings.HasPrefix(name, storeTmpPrefix):
			if err := os.Remove(filepath.Join(s.dir, name)); err != nil {
				return fmt.Errorf("remove an interrupted upload: %w", err)
			}
			s.log.Info("file store: removed an interrupted upload", "name", name)
		case ValidFileID(name):
			contents = append(contents, name)
		case strings.HasSuffix(name, storeMetaExt) && ValidFileID(strings.TrimSuffix(name, storeMetaExt)):
			metas[strings.TrimSuffix(name, storeMetaExt)] = true
		default:
			s.log.Warn("file store: ignoring an unexpected entry", "dir", s.dir, "name", name)
		}
	}
	for _, id := range contents {
		hasMeta := metas[id]
		delete(metas, id)
		fi, err := os.Lstat(s.contentPath(id))
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			s.log.Warn("file store: ignoring a content entry that is not a regular file", "id", id)
			continue
		}
		info, err := s.readMeta(id)
		switch {
		case err == nil && info.Size != fi.Size():
			// The metadata holds the size the upload had: the content
			// is damaged.
			s.log.Warn("file store: removing a file whose size changed", "id", id, "size", fi.Size(), "stored_size", info.Size)
			s.removeFiles(id)
			continue
		case err != nil:
			// The metadata is lost or damaged (not by a crash: it is
			// in place before the content). The content itself is
			// checked on use; keep it under what the disk says.
			if hasMeta {
				s.log.Warn("file store: unreadable metadata; rebuilding it", "id", id, "err", err)
			}
			info = StoredFile{ID: id, Size: fi.Size(), CreatedAt: fi.ModTime().UTC()}
			if err := s.writeMeta(info); err != nil {
				s.log.Warn("file store: rebuild metadata", "id", id, "err", err)
			}
		}
		s.files[id] = &storedEntry{info: info, lastUse: latest(info.CreatedAt, accessTime(fi))}
		s.used += info.Size
	}
	for id := range metas {
		// Metadata whose upload did not reach its commit point.
		if err := os.Remove(s.metaPath(id)); err != nil {
			return fmt.Errorf("remove orphaned metadata: %w", err)
		}
	}
	return nil
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (s *FileStore) contentPath(id string) string { return filepath.Join(s.dir, id) }

func (s *FileStore) metaPath(id string) string { return filepath.Join(s.dir, id+storeMetaExt) }

func (s *FileStore) readMeta(id string) (StoredFile, error) {
	b, err := os.ReadFile(s.metaPath(id))
	if err != nil {
		return StoredFile{}, err
	}
	var info StoredFile
	if err := json.Unmarshal(b, &info); err != nil {
		return StoredFile{}, err
	}
	if info.ID != id {
		return StoredFile{}, fmt.Errorf("metadata names id %q", info.ID)
	}
	return info, nil
}

// writeMeta puts the metadata of info in place atomically and durably.
func (s *FileStore) writeMeta(info StoredFile) error {
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.dir, storeTmpPrefix+"*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	_, err = tmp.Write(append(b, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.metaPath(info.ID))
	}
	if err == nil {
		err = syncDir(s.dir)
	}
	return err
}

// syncDir makes the renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Put stores the content read from r until EOF under its SHA-256, with the
// file name and content type ("" for none), and returns its entry.
// alreadyExists is true when the same content was stored already; nothing
// is then stored again, the first upload's metadata stays, and the file's
// expiry is refreshed.
//
// The content is hashed and written to disk as it is read, never held in
// memory. Put stops reading after MaxUploadBytes+1 bytes: payload_too_large.
// More than MaxConcurrentUploads at once, or new content that does not fit
// in MaxBytes (once expired files are dropped), is capacity_exhausted.
// A failure to read r is invalid_request (or r's own *Error), the end of
// ctx is cancelled or deadline_exceeded. A failed Put leaves nothing.
func (s *FileStore) Put(ctx context.Context, r io.Reader, name, contentType string) (StoredFile, bool, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return StoredFile{}, false, errStoreClosed
	}
	s.putting.Add(1)
	s.mu.Unlock()
	defer s.putting.Done()
	select {
	case s.uploads <- struct{}{}:
	default:
		return StoredFile{}, false, &Error{Code: CodeCapacityExhausted,
			Msg: fmt.Sprintf("upload: too many uploads in progress (at most %d)", cap(s.uploads))}
	}
	defer func() { <-s.uploads }()
	if s.remote != nil && !s.guard.brk.canCall() {
		// The store is failing: refuse before reading the content.
		return StoredFile{}, false, s.storeDown("upload", errCacheUnavailable)
	}
	u, err := s.receive(ctx, r)
	if err != nil {
		return StoredFile{}, false, err
	}
	defer u.discard()
	if s.remote != nil {
		return s.putRemote(ctx, u, name, contentType)
	}
	return s.commit(ctx, u, name, contentType)
}

// putOutput stores the content of r, a collected output of at most limit
// bytes, as Put stores an upload named name, with no content type. The
// content is hashed first: content stored already only has its expiry
// refreshed, and nothing is written. Outputs take no upload slot
// (MaxConcurrentUploads bounds the clients' uploads; a Sandbox's task
// slots bound its outputs). The errors are Put's.
func (s *FileStore) putOutput(ctx context.Context, r io.ReaderAt, name string, limit int64) (StoredFile, error) {
	h := sha256.New()
	n, err := io.Copy(h, io.NewSectionReader(r, 0, limit+1))
	if err != nil {
		return StoredFile{}, fmt.Errorf("read the output: %w", err)
	}
	if n > limit {
		return StoredFile{}, &Error{Code: CodePayloadTooLarge,
			Msg: fmt.Sprintf("output: the file is larger than the limit of %d bytes", limit)}
	}
	if s.remote != nil {
		if info, err := s.statRemote(ctx, hex.EncodeToString(h.Sum(nil)), true); err == nil {
			return info, nil
		} else if CodeOf(err) != CodeNotFound {
			return StoredFile{}, err
		}
	} else if info, ok := s.reuse(hex.EncodeToString(h.Sum(nil))); ok {
		return info, nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return StoredFile{}, errStoreClosed
	}
	s.putting.Add(1)
	s.mu.Unlock()
	defer s.putting.Done()
	u, err := s.receive(ctx, io.NewSectionReader(r, 0, n))
	if err != nil {
		return StoredFile{}, err
	}
	defer u.discard()
	if s.remote != nil {
		info, _, err := s.putRemote(ctx, u, name, "")
		return info, err
	}
	info, _, err := s.commit(ctx, u, name, "")
	return info, err
}

// reuse returns the entry of id if it is stored, and refreshes its
// expiry, as an upload of content stored already does.
func (s *FileStore) reuse(id string) (StoredFile, bool) {
	s.mu.Lock()
	e := s.liveLocked(id)
	if s.closed || e == nil {
		s.mu.Unlock()
		return StoredFile{}, false
	}
	now := s.now()
	e.lastUse = now
	info := e.info
	s.mu.Unlock()
	s.touch(id, now)
	return info, true
}

// upload is the state of one Put.
type upload struct {
	s        *FileStore
	tmp      *os.File // nil once full, or once renamed into place
	tmpName  string
	full     bool  // the store had no room: the content is hashed, not kept
	diskFull error // why, when it was its disk (ENOSPC, EDQUOT), not its quota
	reserved int64 // bytes of s.reserved held by this upload
	size     int64
	id       string
	stream   *partStream // sending it to the shared store, once larger than a part
	flushed  int64       // bytes of tmp whose writeback has begun
}

// writebackChunk is how much of a spool is written before its writeback
// to disk is begun (startWriteback).
const writebackChunk = 8 * MiB

// putBufs are the read buffers of uploads.
var putBufs = sync.Pool{New: func() any { return new([256 * KiB]byte) }}

// pipeHash hashes an upload's chunks on a goroutine of its own, so that
// hashing, a third of what an upload costs, overlaps the reading and
// writing of the chunks after. It owns three buffers of putBufs, taken
// with next and handed back hashed (add) or unused (give), so that an
// upload of any size allocates nothing more. Its methods are called by
// one goroutine.
type pipeHash struct {
	h      hash.Hash
	chunks chan hashChunk
	free   chan *[256 * KiB]byte
	done   chan struct{}
	closed bool
}

type hashChunk struct {
	buf *[256 * KiB]byte
	n   int
}

// pipeBuffers is how many buffers an upload holds: one being read, two
// being hashed.
const pipeBuffers = 3

func newPipeHash() *pipeHash {
	p := &pipeHash{h: sha256.New(), chunks: make(chan hashChunk, pipeBuffers),
		free: make(chan *[256 * KiB]byte, pipeBuffers), done: make(chan struct{})}
	for range pipeBuffers {
		p.free <- putBufs.Get().(*[256 * KiB]byte)
	}
	go func() {
		defer close(p.done)
		for c := range p.chunks {
			p.h.Write(c.buf[:c.n])
			p.free <- c.buf
		}
	}()
	return p
}

// next returns a buffer to read into, waiting for one to be hashed.
func (p *pipeHash) next() *[256 * KiB]byte { return <-p.free }

// add hashes the first n bytes of buf, a buffer of next.
func (p *pipeHash) add(buf *[256 * KiB]byte, n int) { p.chunks <- hashChunk{buf, n} }

// give hands back a buffer of next unused.
func (p *pipeHash) give(buf *[256 * KiB]byte) { p.free <- buf }

// sum returns the hash of what was added.
func (p *pipeHash) sum() []byte {
	p.stop()
	return p.h.Sum(nil)
}

// stop waits for the chunks added to be hashed, and puts the buffers
// back in putBufs.
func (p *pipeHash) stop() {
	if p.closed {
		return
	}
	p.closed = true
	close(p.chunks)
	<-p.done
	for range pipeBuffers {
		putBufs.Put(<-p.free)
	}
}

// receive reads r to EOF into a temporary file, hashing it.
func (s *FileStore) receive(ctx context.Context, r io.Reader) (_ *upload, err error) {
	tmp, err := os.CreateTemp(s.dir, storeTmpPrefix+"*")
	if err != nil {
		return nil, s.ioError("upload", err)
	}
	u := &upload{s: s, tmp: tmp, tmpName: tmp.Name()}
	defer func() {
		if err != nil {
			u.discard()
		}
	}()
	h := newPipeHash()
	defer h.stop()
	// stopped is why the upload must end before its next read, if it
	// must: the caller gave up, or the store is closing.
	stopped := func() error {
		if err := ctx.Err(); err != nil {
			return &Error{Code: CodeOf(err), Msg: "upload: cancelled", Err: err}
		}
		select {
		case <-s.stop:
			return errStoreClosed
		default:
		}
		return nil
	}
	for {
		if err := stopped(); err != nil {
			return nil, err
		}
		// Never read past the first byte over the limit. The buffer is
		// filled before it is hashed and written: a multipart part reads
		// 4 KiB at a time, and a write per 4 KiB costs more than the
		// copy.
		buf := h.next()
		p := buf[:min(int64(len(buf)), s.maxPut+1-u.size)]
		n, rerr := r.Read(p)
		for rerr == nil && n < len(p) {
			if err := stopped(); err != nil {
				h.give(buf)
				return nil, err
			}
			var m int
			m, rerr = r.Read(p[n:])
			n += m
		}
		if n == 0 {
			h.give(buf)
		} else {
			u.size += int64(n)
			if u.size > s.maxPut {
				h.give(buf)
				return nil, &Error{Code: CodePayloadTooLarge,
					Msg: fmt.Sprintf("upload: the file is larger than the limit of %d bytes", s.maxPut)}
			}
			if err := u.write(buf[:n]); err != nil {
				h.give(buf)
				return nil, err
			}
			h.add(buf, n)
			if err := u.send(ctx); err != nil {
				return nil, err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			var e *Error
			switch {
			case errors.As(rerr, &e):
				return nil, rerr
			case ctx.Err() != nil:
				return nil, &Error{Code: CodeOf(ctx.Err()), Msg: "upload: cancelled", Err: rerr}
			}
			return nil, &Error{Code: CodeInvalidRequest, Msg: "upload: reading the file failed", Err: rerr}
		}
	}
	u.id = hex.EncodeToString(h.sum())
	if u.tmp != nil {
		var err error
		if s.remote == nil {
			// Durable before it is renamed into place; with a shared
			// store the spool is only a cached copy.
			err = u.tmp.Sync()
		}
		if cerr := u.tmp.Close(); err == nil {
			err = cerr
		}
		u.tmp = nil
		if err != nil {
			return nil, s.ioError("upload", err)
		}
		if testHookPut != nil {
			testHookPut("synced")
		}
	}
	return u, nil
}

// write appends p to the temporary file within the store's quota. When
// the store is full (by quota or on disk) the temporary is dropped and
// the rest of the upload is only hashed: it may be content that is stored
// already.
func (u *upload) write(p []byte) error {
	if u.full {
		return nil
	}
	// With a shared store the spool is kept whole (it is bounded by
	// MaxConcurrentUploads x MaxUploadBytes); the cache's bound applies
	// once it is cached.
	if u.s.remote == nil && !u.s.reserve(int64(len(p))) {
		u.drop()
		return nil
	}
	u.reserved += int64(len(p))
	if written := u.size - int64(len(p)); u.s.remote == nil && written-u.flushed >= writebackChunk {
		// The spool is fsynced before it is renamed into place: have
		// the disk write what it holds while the rest arrives, so that
		// the fsync waits for the last chunk only.
		startWriteback(u.tmp, u.flushed, written-u.flushed)
		u.flushed = written
	}
	if _, err := u.tmp.Write(p); err != nil {
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			u.s.log.Warn("file store: the disk is full", "err", err)
			u.diskFull = err
			u.drop()
			return nil
		}
		return u.s.ioError("upload", err)
	}
	return nil
}

// send sends what has arrived of an upload to a shared store, in parts,
// once it is larger than one part; it returns the failure of a part sent
// before: the upload ends then, refused.
func (u *upload) send(ctx context.Context) error {
	s := u.s
	if s.remote == nil || u.full {
		return nil
	}
	if u.stream == nil {
		if u.size <= s.stagePart() {
			return nil
		}
		var err error
		if u.stream, err = s.startStream(ctx, u.tmpName, s.stagePart()); err != nil {
			return err
		}
	}
	if err := u.stream.queue(u.size); err != nil {
		if ctx.Err() != nil {
			return &Error{Code: CodeOf(ctx.Err()), Msg: "upload: cancelled", Err: err}
		}
		return s.storeDown("upload", err)
	}
	return nil
}

// drop gives up keeping the content: the store is full.
func (u *upload) drop() {
	u.full = true
	u.discard()
}

// discard removes the temporary file, if any, and what was staged of it
// in a shared store, and releases the reservation.
func (u *upload) discard() {
	if u.stream != nil {
		u.stream.abort()
		u.stream = nil
	}
	if u.tmp != nil {
		u.tmp.Close()
		u.tmp = nil
	}
	if u.tmpName != "" {
		os.Remove(u.tmpName)
		u.tmpName = ""
	}
	u.s.unreserve(u.reserved)
	u.reserved = 0
}

// reserve takes n bytes of the quota for an upload in progress.
func (s *FileStore) reserve(n int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used+s.reserved+n > s.maxSize {
		s.dropExpiredLocked()
		if s.used+s.reserved+n > s.maxSize {
			return false
		}
	}
	s.reserved += n
	return true
}

func (s *FileStore) unreserve(n int64) {
	if n == 0 {
		return
	}
	s.mu.Lock()
	s.reserved -= n
	s.mu.Unlock()
}

// commit puts a received upload in place, or finds its content stored.
func (s *FileStore) commit(ctx context.Context, u *upload, name, contentType string) (StoredFile, bool, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return StoredFile{}, false, errStoreClosed
		}
		if e := s.liveLocked(u.id); e != nil {
			now := s.now()
			e.lastUse = now
			info := e.info
			s.mu.Unlock()
			s.touch(u.id, now)
			return info, true, nil
		}
		if wait, busy := s.pending[u.id]; busy {
			// The same content is being put in place; see how that ends.
			s.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return StoredFile{}, false, &Error{Code: CodeOf(ctx.Err()), Msg: "upload: cancelled", Err: ctx.Err()}
			}
		}
		if u.full {
			used := s.used
			s.mu.Unlock()
			if u.diskFull != nil {
				return StoredFile{}, false, &Error{Code: CodeCapacityExhausted, Err: u.diskFull,
					Msg: fmt.Sprintf("upload: the disk of the file store is full (the store holds %d of its %d bytes, FILESTORE_MAX_BYTES)", used, s.maxSize)}
			}
			return StoredFile{}, false, &Error{Code: CodeCapacityExhausted,
				Msg: fmt.Sprintf("upload: the file store is full (it holds %d of its %d bytes, FILESTORE_MAX_BYTES)", used, s.maxSize)}
		}
		done := make(chan struct{})
		s.pending[u.id] = done
		s.mu.Unlock()

		now := s.now()
		info := StoredFile{ID: u.id, Filename: optional(name), ContentType: optional(contentType), Size: u.size, CreatedAt: now.UTC()}
		err := s.install(u, info)

		s.mu.Lock()
		delete(s.pending, u.id)
		close(done)
		if err != nil {
			s.mu.Unlock()
			return StoredFile{}, false, s.ioError("upload", err)
		}
		s.files[u.id] = &storedEntry{info: info, lastUse: now}
		s.used += u.size
		s.reserved -= u.reserved
		u.reserved = 0
		s.mu.Unlock()
		s.touch(u.id, now)
		return info, false, nil
	}
}

// install renames the upload's metadata and then its content into place;
// the content's rename commits the file. On failure nothing is left.
func (s *FileStore) install(u *upload, info StoredFile) error {
	if err := s.writeMeta(info); err != nil {
		os.Remove(s.metaPath(info.ID))
		return err
	}
	if testHookPut != nil {
		testHookPut("meta")
	}
	if err := os.Rename(u.tmpName, s.contentPath(info.ID)); err != nil {
		os.Remove(s.metaPath(info.ID))
		return err
	}
	u.tmpName = ""
	if testHookPut != nil {
		testHookPut("content")
	}
	if err := syncDir(s.dir); err != nil {
		s.removeFiles(info.ID)
		return err
	}
	return nil
}

// optional returns nil for "", else a pointer to valid UTF-8 (the metadata
// must survive a JSON round trip unchanged).
func optional(s string) *string {
	if s == "" {
		return nil
	}
	s = validUTF8(s)
	return &s
}

// touch records t as the last use of the file, as its access time on
// disk, so that expiry survives restarts. Best effort.
func (s *FileStore) touch(id string, t time.Time) {
	if err := os.Chtimes(s.contentPath(id), t, time.Time{}); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("file store: record last use", "id", id, "err", err)
	}
}

// List returns the stored files, newest first; with a shared store, nil
// when it fails (ListFiles says why).
func (s *FileStore) List() []StoredFile {
	files, _ := s.ListFiles(context.Background())
	return files
}

// ListFiles returns the stored files, newest first: with a shared store,
// those of every instance, or capacity_exhausted while it is failing.
func (s *FileStore) ListFiles(ctx context.Context) ([]StoredFile, error) {
	if s.remote != nil {
		return s.listRemote(ctx)
	}
	return s.listLocal(), nil
}

func (s *FileStore) listLocal() []StoredFile {
	s.mu.Lock()
	now := s.now()
	out := make([]StoredFile, 0, len(s.files))
	for _, e := range s.files {
		if !s.expired(e, now) {
			out = append(out, e.info)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b StoredFile) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Stat returns the entry of a stored file without reading its content:
// invalid_request for an id that is not 64 lowercase hex characters,
// not_found for a file that is not stored (or has expired).
func (s *FileStore) Stat(id string) (StoredFile, error) {
	if err := checkFileID(id); err != nil {
		return StoredFile{}, err
	}
	if s.remote != nil {
		return s.statRemote(context.Background(), id, false)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return StoredFile{}, errStoreClosed
	}
	e := s.liveLocked(id)
	if e == nil {
		return StoredFile{}, notStored(id)
	}
	return e.info, nil
}

// Open opens a stored file for reading, positioned at its start, and
// returns it with its entry; the caller closes it. The content is verified
// to hash to id (once per version of the file on disk); a file that does
// not is removed and reported not_found, like a file that is not stored.
// Open counts as a use: the file's expiry is refreshed. The returned file
// stays readable after the stored file is deleted or expires.
func (s *FileStore) Open(id string) (*os.File, StoredFile, error) {
	if err := checkFileID(id); err != nil {
		return nil, StoredFile{}, err
	}
	if s.remote != nil {
		return s.openShared(id)
	}
	return s.openLocal(id)
}

// openLocal opens the file of id in Dir.
func (s *FileStore) openLocal(id string) (*os.File, StoredFile, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, StoredFile{}, errStoreClosed
	}
	e := s.liveLocked(id)
	if e == nil {
		s.mu.Unlock()
		return nil, StoredFile{}, notStored(id)
	}
	verified := e.verified
	s.mu.Unlock()

	f, err := os.Open(s.contentPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		s.forget(e, nil, "the content file is missing")
		return nil, StoredFile{}, notStored(id)
	}
	if err != nil {
		return nil, StoredFile{}, s.ioError("open file", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, StoredFile{}, s.ioError("open file", err)
	}
	if !sameVersion(verified, fi) {
		ok, err := s.verify(f, fi, e.info)
		if err != nil {
			f.Close()
			return nil, StoredFile{}, s.ioError("verify file", err)
		}
		if !ok {
			f.Close()
			s.forget(e, fi, "its content no longer hashes to its id")
			return nil, StoredFile{}, notStored(id)
		}
	}
	now := s.now()
	s.mu.Lock()
	if s.files[id] == e {
		e.verified = fi
		e.lastUse = now
	}
	info := e.info
	s.mu.Unlock()
	s.touch(id, now)
	return f, info, nil
}

// sameVersion reports whether fi is the file v was: same inode, size and
// modification time.
func sameVersion(v, fi os.FileInfo) bool {
	return v != nil && os.SameFile(v, fi) && v.Size() == fi.Size() && v.ModTime().Equal(fi.ModTime())
}

// verify reports whether f holds info's content, and rewinds f.
func (s *FileStore) verify(f *os.File, fi os.FileInfo, info StoredFile) (bool, error) {
	s.hashed.Add(1)
	if fi.Size() != info.Size {
		return false, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, fi.Size()+1)); err != nil {
		return false, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return false, err
	}
	return hex.EncodeToString(h.Sum(nil)) == info.ID, nil
}

// forget removes entry e, found damaged, from the index and from disk,
// unless it was replaced meanwhile (then fi, the damaged file, is not the
// one on disk).
func (s *FileStore) forget(e *storedEntry, fi os.FileInfo, why string) {
	id := e.info.ID
	s.log.Warn("file store: removing a damaged file", "id", id, "reason", why)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files[id] != e {
		return
	}
	if fi != nil {
		if cur, err := os.Stat(s.contentPath(id)); err == nil && !os.SameFile(cur, fi) {
			return
		}
	}
	s.removeLocked(id)
}

// Delete removes a stored file: invalid_request for an id that is not 64
// lowercase hex characters, not_found for a file that is not stored.
// Files opened by [FileStore.Open] stay readable.
func (s *FileStore) Delete(id string) error {
	if err := checkFileID(id); err != nil {
		return err
	}
	if s.remote != nil {
		return s.deleteRemote(context.Background(), id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errStoreClosed
	}
	if s.liveLocked(id) == nil {
		return notStored(id)
	}
	if err := s.removeLocked(id); err != nil {
		return s.ioError("delete file", err)
	}
	return nil
}

// Usage returns the number and total size of the stored files, for metrics.
// Expired files count until the sweep removes them.
//
// With a shared store, they are those of the whole store as this
// instance last counted them; CacheUsage gives this instance's cache.
func (s *FileStore) Usage() (files int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.remote != nil {
		return s.fleetFiles, s.fleetUsed
	}
	return len(s.files), s.used
}

// CacheUsage returns the number and total size of the files in Dir: with
// a shared store, this instance's cache of it; else the store itself.
func (s *FileStore) CacheUsage() (files int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.files), s.used
}

// Close stops the expiry sweep, ends the uploads in progress (they fail
// with shutting_down at their next read of content; Close waits for them)
// and releases Dir. Files opened by [FileStore.Open] stay readable; the
// other methods then fail with shutting_down. Close is idempotent.
func (s *FileStore) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.stop)
		<-s.swept
		s.putting.Wait()
		s.lock.Close()
		if s.remote != nil {
			s.remote.close()
		}
	})
	return nil
}

var errStoreClosed = &Error{Code: CodeShuttingDown, Msg: "the file store is closed"}

func checkFileID(id string) error {
	if !ValidFileID(id) {
		return &Error{Code: CodeInvalidRequest, Msg: "file id: " + msgFileID}
	}
	return nil
}

func notStored(id string) error {
	return &Error{Code: CodeNotFound, Msg: fmt.Sprintf("file %s is not stored", id)}
}

// ioError wraps a failure of the store's disk: capacity_exhausted when it
// is full, else internal_error. The message names no host path.
func (s *FileStore) ioError(op string, err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return &Error{Code: CodeCapacityExhausted, Msg: op + ": the file store's disk is full", Err: err}
	}
	s.log.Error("file store: "+op, "err", err)
	return &Error{Code: CodeInternalError, Msg: op + ": file store failure", Err: err}
}

// expired reports whether e's time is up at now.
func (s *FileStore) expired(e *storedEntry, now time.Time) bool {
	return !now.Before(e.lastUse.Add(s.ttl))
}

// liveLocked returns the entry of id if it is stored and not expired; an
// expired one is removed.
func (s *FileStore) liveLocked(id string) *storedEntry {
	e := s.files[id]
	if e == nil {
		return nil
	}
	if s.expired(e, s.now()) {
		s.removeLocked(id)
		return nil
	}
	return e
}

// removeLocked drops id from the index and from disk: the content first
// (the commit point), then the metadata. Callers hold s.mu, so no upload
// of the same content can be renamed into place meanwhile.
func (s *FileStore) removeLocked(id string) error {
	if e := s.files[id]; e != nil {
		s.used -= e.info.Size
		delete(s.files, id)
	}
	return s.removeFiles(id)
}

func (s *FileStore) removeFiles(id string) error {
	var errs []error
	for _, p := range []string{s.contentPath(id), s.metaPath(id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Error("file store: remove", "id", id, "err", err)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// dropExpiredLocked removes every expired file and returns how many.
func (s *FileStore) dropExpiredLocked() int {
	now := s.now()
	n := 0
	for id, e := range s.files {
		if s.expired(e, now) {
			s.removeLocked(id)
			n++
		}
	}
	return n
}

// sweepExpired removes every expired file.
func (s *FileStore) sweepExpired() {
	s.mu.Lock()
	n := s.dropExpiredLocked()
	s.mu.Unlock()
	if n > 0 {
		s.log.Info("file store: removed expired files", "count", n)
	}
}

// sweepPeriod is how often a store with this TTL looks for expired
// entries: a tenth of the TTL, between a second and a minute.
func sweepPeriod(ttl time.Duration) time.Duration {
	return min(max(ttl/10, time.Second), time.Minute)
}

// sweepEvery calls sweep every period until stop is closed, then closes
// done. The file store and the step cache's directory run their expiry
// sweeps with it.
func sweepEvery(period time.Duration, stop <-chan struct{}, done chan<- struct{}, sweep func()) {
	defer close(done)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			sweep()
		}
	}
}

// The shared store: the contract of its backends, and the policy of a
// FileStore that caches one in Dir (see FileStore, "Shared by a fleet").

// fileObjects is a store of file contents by id, shared by the instances
// of a fleet (filestore_s3.go). Implementations are safe for concurrent
// use, by several processes too, and honour ctx: the FileStore's guard
// gives every call a deadline and counts its failures.
type fileObjects interface {
	// head returns the entry and last use of id, or errNoObject.
	head(ctx context.Context, id string) (objectInfo, error)
	// put writes info.Size bytes of content as the file info describes,
	// whole or not at all, unless it exists: then errObjectExists.
	put(ctx context.Context, info StoredFile, content *os.File) error
	// stage begins staged content: the content of a file whose id is not
	// known yet, sent in parts as it arrives, which no file refers to
	// until link.
	stage(ctx context.Context) (stagedContent, error)
	// link writes the file obj describes, its content the staged
	// content obj.ref, unless the file exists: then errObjectExists.
	link(ctx context.Context, obj objectInfo) error
	// get writes the content of the file obj describes (as head gave it)
	// to w and returns how many bytes it wrote, or errNoObject.
	get(ctx context.Context, obj objectInfo, w io.Writer) (int64, error)
	// touch renews the last use of the file obj describes.
	touch(ctx context.Context, obj objectInfo) error
	// list calls each for every stored file.
	list(ctx context.Context, each func(id string, size int64, lastUse time.Time)) error
	// remove removes the file of id and its content; removing none is no
	// error.
	remove(ctx context.Context, id string) error
	// tidy removes the staged content, begun before cutoff, that no file
	// refers to: what uploads cut after their first part left. It
	// returns how much it removed.
	tidy(ctx context.Context, cutoff time.Time) (int, error)
	close() error
}

// stagedContent is content being staged (fileObjects.stage).
type stagedContent interface {
	// part sends size bytes of content as part n, from 1; every part
	// but the last has the same size, at least 5 MiB. Parts may be sent
	// concurrently.
	part(ctx context.Context, n int, content io.Reader, size int64) error
	// complete ends the content, all its parts sent, and returns its
	// reference (objectInfo.ref).
	complete(ctx context.Context) (string, error)
	// abort removes what was staged, completed or not.
	abort(ctx context.Context) error
}

// objectInfo is what the shared store says of a file.
type objectInfo struct {
	info    StoredFile
	lastUse time.Time
	ref     string // where its content is, if not with the file: staged content
}

// errNoObject: the shared store holds no such file.
var errNoObject = errors.New("no such file in the store")

// Defaults of the shared store.
const (
	defaultStoreTimeout = 2 * time.Second
	// transferRate is the slowest transfer a call's deadline allows for:
	// each 8 MiB adds a second.
	transferRate = 8 * MiB
	// freshFor is how long a confirmation by the store holds.
	freshFor = time.Second
)

// openRemote sets up the shared store of rawURL.
func (s *FileStore) openRemote(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	var rest url.Values
	switch u.Scheme {
	case "s3":
		var loc s3Location
		loc, rest, err = parseS3URL(rawURL)
		if err != nil {
			return err
		}
		if s.remote, err = openS3Objects(loc); err != nil {
			return err
		}
		s.kind = "s3"
	default:
		return fmt.Errorf("want s3://bucket/prefix?endpoint=host:port, got the scheme %q", u.Scheme)
	}
	s.fleetMax, s.timeout, s.fresh = s.maxSize, defaultStoreTimeout, freshFor
	if v := rest.Get("cache_bytes"); v != "" {
		n, err := parseBinarySize(v)
		if err != nil || n < 1 {
			return fmt.Errorf("cache_bytes: want a size such as 512MiB, got %q", v)
		}
		s.maxSize = n
	}
	if v := rest.Get("timeout_ms"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > 1<<40 {
			return fmt.Errorf("timeout_ms: want a positive whole number of milliseconds, got %q", v)
		}
		s.timeout = time.Duration(n) * time.Millisecond
	}
	s.metas = make(map[string]StoredFile)
	s.guard = storeGuard{brk: breaker{now: s.now}, name: "file store", kind: s.kind, log: s.log, errs: &s.errs}
	return nil
}

func (s *FileStore) storeGuard() *storeGuard { return &s.guard }

// transfer is the deadline of a call that moves size bytes.
func (s *FileStore) transfer(size int64) time.Duration {
	return s.timeout + time.Duration(size)*time.Second/transferRate
}

// touchEvery is how long after its last renewal a use renews a file's
// last use in the store.
func (s *FileStore) touchEvery() time.Duration { return max(s.ttl/10, time.Second) }

// expiredRemote reports whether a file the store last saw used at
// lastUse has expired: TTL after its last use, give or take touchEvery.
func (s *FileStore) expiredRemote(lastUse time.Time) bool {
	return !s.now().Before(lastUse.Add(s.ttl + s.touchEvery()))
}

// storeDown is the error of an operation that needed the store while it
// fails; a refusal by the store (no bucket, no access) is the operator's
// to fix and an internal_error.
func (s *FileStore) storeDown(op string, err error) error {
	var reply errStoreReply
	if errors.As(err, &reply) {
		return &Error{Code: CodeInternalError, Msg: op + ": the file store's object store refused the call (the server log says why)", Err: err}
	}
	return &Error{Code: CodeCapacityExhausted, Msg: op + ": the file store's object store is not answering; try again shortly", Err: err}
}

// headRemote asks the store about id; an expired file is removed and
// errNoObject. Its metadata is remembered for List.
func (s *FileStore) headRemote(ctx context.Context, id string) (objectInfo, error) {
	obj, err := callStore(ctx, s, s.timeout, "look up a file", id,
		func(ctx context.Context) (objectInfo, error) { return s.remote.head(ctx, id) }, nil)
	if err != nil {
		if errors.Is(err, errNoObject) {
			s.forgetRemote(id, -1)
		}
		return obj, err
	}
	if s.expiredRemote(obj.lastUse) {
		s.removeRemote(ctx, id, obj.info.Size)
		return objectInfo{}, errNoObject
	}
	s.mu.Lock()
	s.metas[id] = obj.info
	s.mu.Unlock()
	return obj, nil
}

// renew renews the last use of obj in the store when it is due.
func (s *FileStore) renew(ctx context.Context, obj objectInfo) {
	if s.now().Sub(obj.lastUse) < s.touchEvery() {
		return
	}
	callStore(ctx, s, s.transfer(obj.info.Size), "renew a file's last use", obj.info.ID,
		func(ctx context.Context) (struct{}, error) { return struct{}{}, s.remote.touch(ctx, obj) }, nil)
}

// removeRemote removes id from the store, and from the count of size
// bytes (-1: unknown), and drops it from the cache.
func (s *FileStore) removeRemote(ctx context.Context, id string, size int64) error {
	_, err := callStore(ctx, s, s.timeout, "remove a file", id,
		func(ctx context.Context) (struct{}, error) { return struct{}{}, s.remote.remove(ctx, id) }, nil)
	if err == nil {
		s.forgetRemote(id, size)
	}
	return err
}

// forgetRemote drops id, gone from the store, from the cache and from
// the count (by size bytes when known, >= 0).
func (s *FileStore) forgetRemote(id string, size int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.metas[id]; ok && size >= 0 {
		s.countLocked(-1, -size)
	}
	delete(s.metas, id)
	if s.files[id] != nil {
		s.removeLocked(id)
	}
}

// statRemote returns the entry of id in the store. A use (an output
// stored again) renews its last use.
func (s *FileStore) statRemote(ctx context.Context, id string, use bool) (StoredFile, error) {
	obj, err := s.headRemote(ctx, id)
	switch {
	case errors.Is(err, errNoObject):
		return StoredFile{}, notStored(id)
	case err != nil:
		return StoredFile{}, s.storeDown("file store", err)
	}
	if use {
		s.renew(ctx, obj)
	}
	return obj.info, nil
}

// putRemote stores a received upload in the store, unless it holds the
// content already, and keeps the spool as the cached copy.
func (s *FileStore) putRemote(ctx context.Context, u *upload, name, contentType string) (StoredFile, bool, error) {
	if u.full {
		return StoredFile{}, false, &Error{Code: CodeCapacityExhausted, Err: u.diskFull,
			Msg: "upload: the disk of the file store's cache is full"}
	}
	obj, err := s.headRemote(ctx, u.id)
	switch {
	case err == nil:
		s.renew(ctx, obj)
		s.cache(u, obj.info)
		return obj.info, true, nil
	case !errors.Is(err, errNoObject):
		return StoredFile{}, false, s.storeDown("upload", err)
	}
	if err := s.fitRemote(ctx, u.size); err != nil {
		return StoredFile{}, false, err
	}
	info := StoredFile{ID: u.id, Filename: optional(name), ContentType: optional(contentType), Size: u.size, CreatedAt: s.now().UTC()}
	if u.stream != nil {
		err = s.linkStaged(ctx, u, info)
	} else {
		err = s.putWhole(ctx, u, info)
	}
	switch {
	case errors.Is(err, errObjectExists):
		// Another instance stored it meanwhile.
		if obj, err := s.headRemote(ctx, u.id); err == nil {
			s.cache(u, obj.info)
			return obj.info, true, nil
		}
		return info, true, nil
	case err != nil && ctx.Err() != nil:
		return StoredFile{}, false, &Error{Code: CodeOf(ctx.Err()), Msg: "upload: cancelled", Err: err}
	case err != nil:
		return StoredFile{}, false, s.storeDown("upload", err)
	}
	s.mu.Lock()
	if _, ok := s.metas[u.id]; !ok {
		s.countLocked(1, u.size)
	}
	s.metas[u.id] = info
	s.mu.Unlock()
	s.cache(u, info)
	return info, false, nil
}

// putWhole writes a received upload to the store, by one call.
func (s *FileStore) putWhole(ctx context.Context, u *upload, info StoredFile) error {
	f, err := os.Open(u.tmpName)
	if err != nil {
		return s.ioError("upload", err)
	}
	defer f.Close()
	_, err = callStore(ctx, s, s.transfer(u.size), "store a file", u.id,
		func(ctx context.Context) (struct{}, error) { return struct{}{}, s.remote.put(ctx, info, f) }, nil)
	return err
}

// linkStaged ends the staging of a received upload, and writes the file
// info describes with the staged content.
func (s *FileStore) linkStaged(ctx context.Context, u *upload, info StoredFile) error {
	ref, err := u.stream.finish(ctx, u.size)
	if err != nil {
		return err
	}
	obj := objectInfo{info: info, ref: ref}
	_, err = callStore(ctx, s, s.timeout, "store a file", u.id,
		func(ctx context.Context) (struct{}, error) { return struct{}{}, s.remote.link(ctx, obj) }, nil)
	if err == nil {
		u.stream.keep()
		u.stream = nil
	}
	return err
}

// fitRemote refuses an upload of size bytes that the store has no room
// for, by its last count and then by a new one.
func (s *FileStore) fitRemote(ctx context.Context, size int64) error {
	for try := 0; ; try++ {
		s.mu.Lock()
		used := s.fleetUsed
		s.mu.Unlock()
		if used+size <= s.fleetMax {
			return nil
		}
		if try == 1 {
			return &Error{Code: CodeCapacityExhausted,
				Msg: fmt.Sprintf("upload: the file store is full (it holds %d of its %d bytes, FILESTORE_MAX_BYTES)", used, s.fleetMax)}
		}
		if err := s.sweepRemote(ctx); err != nil {
			return s.storeDown("upload", err)
		}
	}
}

// cache keeps the complete spool of u as the cached copy of info, unless
// one is cached already; it was confirmed by the store just now.
func (s *FileStore) cache(u *upload, info StoredFile) {
	s.mu.Lock()
	if e := s.files[info.ID]; e != nil || s.pending[info.ID] != nil {
		if e != nil {
			e.confirmed, e.lastUse = s.now(), s.now()
		}
		s.mu.Unlock()
		return
	}
	done := make(chan struct{})
	s.pending[info.ID] = done
	s.mu.Unlock()
	err := s.install(u, info)
	s.settle(info, done, err, nil)
}

// settle ends the caching of info (pending under done): on success the
// cache holds it, confirmed now, and the least recently used files
// beyond the cache's bound are dropped.
func (s *FileStore) settle(info StoredFile, done chan struct{}, err error, verified os.FileInfo) {
	now := s.now()
	s.mu.Lock()
	delete(s.pending, info.ID)
	close(done)
	if err == nil {
		if old := s.files[info.ID]; old != nil {
			s.used -= old.info.Size
		}
		s.files[info.ID] = &storedEntry{info: info, lastUse: now, confirmed: now, verified: verified}
		s.used += info.Size
	}
	s.mu.Unlock()
	if err != nil {
		s.log.Warn("file store: caching a file", "id", info.ID, "err", err)
		return
	}
	s.evict(info.ID)
}

// unpend ends a look-up of id in the store (pending under done) that
// cached nothing; e, if not nil, is the cached entry the store confirmed.
func (s *FileStore) unpend(id string, done chan struct{}, e *storedEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e != nil {
		e.confirmed = s.now()
	}
	delete(s.pending, id)
	close(done)
}

// evict drops the least recently used cached files until the cache fits
// in its bound, keeping keep. Files opened stay readable.
func (s *FileStore) evict(keep string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used <= s.maxSize {
		return
	}
	entries := make([]*storedEntry, 0, len(s.files))
	for id, e := range s.files {
		if id != keep {
			entries = append(entries, e)
		}
	}
	slices.SortFunc(entries, func(a, b *storedEntry) int { return a.lastUse.Compare(b.lastUse) })
	for _, e := range entries {
		if s.used <= s.maxSize {
			break
		}
		s.removeLocked(e.info.ID)
	}
}

// openShared opens id through the cache: the cached copy while the store
// confirmed it within fresh (or while the store fails), else the store
// is asked, and the content fetched into the cache when it is not there.
func (s *FileStore) openShared(id string) (*os.File, StoredFile, error) {
	ctx := context.Background()
	for try := 0; ; try++ {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, StoredFile{}, errStoreClosed
		}
		e := s.liveLocked(id)
		if e != nil && s.now().Sub(e.confirmed) < s.fresh {
			s.mu.Unlock()
			f, info, err := s.openLocal(id)
			if CodeOf(err) == CodeNotFound && try == 0 {
				continue // evicted or damaged meanwhile
			}
			return f, info, err
		}
		if wait, busy := s.pending[id]; busy {
			s.mu.Unlock()
			<-wait
			continue
		}
		done := make(chan struct{})
		s.pending[id] = done
		s.mu.Unlock()

		obj, err := s.headRemote(ctx, id)
		switch {
		case errors.Is(err, errNoObject):
			s.unpend(id, done, nil)
			return nil, StoredFile{}, notStored(id)
		case err != nil && e != nil:
			// The store fails: serve the cached copy.
			s.unpend(id, done, nil)
			return s.openLocal(id)
		case err != nil:
			s.unpend(id, done, nil)
			return nil, StoredFile{}, s.storeDown("file "+id, err)
		case e != nil:
			s.unpend(id, done, e)
		default:
			fi, err := s.fetch(ctx, obj)
			s.settle(obj.info, done, err, fi)
			if err != nil {
				return nil, StoredFile{}, err
			}
		}
		s.renew(ctx, obj)
		if try > 0 {
			return s.openLocal(id)
		}
	}
}

// fetch copies the content of obj from the store into Dir, checking that
// it hashes to its id, and puts it in place as the cached copy; it
// returns the file as verified.
func (s *FileStore) fetch(ctx context.Context, obj objectInfo) (os.FileInfo, error) {
	id, size := obj.info.ID, obj.info.Size
	tmp, err := os.CreateTemp(s.dir, storeTmpPrefix+"*")
	if err != nil {
		return nil, s.ioError("fetch file", err)
	}
	defer func() {
		tmp.Close()
		if tmp.Name() != "" {
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	n, err := callStore(ctx, s, s.transfer(size), "fetch a file", id, func(ctx context.Context) (int64, error) {
		return s.remote.get(ctx, obj, io.MultiWriter(tmp, h))
	}, nil)
	switch {
	case errors.Is(err, errNoObject):
		s.forgetRemote(id, size)
		return nil, notStored(id)
	case err != nil:
		return nil, s.storeDown("file "+id, err)
	case n != size || hex.EncodeToString(h.Sum(nil)) != id:
		// Not the file of this id, whatever it is: never served.
		s.log.Error("file store: removing an object of the store that does not hash to its id", "id", id, "size", n, "stored_size", size)
		s.removeRemote(ctx, id, size)
		return nil, notStored(id)
	}
	s.fetches.Add(1)
	fi, err := tmp.Stat()
	if err != nil {
		return nil, s.ioError("fetch file", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, s.ioError("fetch file", err)
	}
	u := &upload{s: s, tmpName: tmp.Name()}
	if err := s.install(u, obj.info); err != nil {
		return nil, s.ioError("fetch file", err)
	}
	return fi, nil
}

// deleteRemote removes id from the store and the cache.
func (s *FileStore) deleteRemote(ctx context.Context, id string) error {
	obj, err := s.headRemote(ctx, id)
	switch {
	case errors.Is(err, errNoObject):
		return notStored(id)
	case err != nil:
		return s.storeDown("delete file", err)
	}
	if err := s.removeRemote(ctx, id, obj.info.Size); err != nil {
		return s.storeDown("delete file", err)
	}
	return nil
}

// listRemote lists the store: its files, newest first.
func (s *FileStore) listRemote(ctx context.Context) ([]StoredFile, error) {
	type object struct {
		id      string
		size    int64
		lastUse time.Time
	}
	var objs []object
	_, err := callStore(ctx, s, dropTimeouts*s.timeout, "list the files", "", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, s.remote.list(ctx, func(id string, size int64, lastUse time.Time) {
			objs = append(objs, object{id, size, lastUse})
		})
	}, nil)
	if err != nil {
		return nil, s.storeDown("list files", err)
	}
	out := make([]StoredFile, 0, len(objs))
	for _, o := range objs {
		if s.expiredRemote(o.lastUse) {
			continue
		}
		s.mu.Lock()
		info, ok := s.metas[o.id]
		s.mu.Unlock()
		if !ok {
			obj, err := s.headRemote(ctx, o.id)
			if errors.Is(err, errNoObject) {
				continue
			} else if err != nil {
				return nil, s.storeDown("list files", err)
			}
			info = obj.info
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b StoredFile) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// sweepRemote lists the store: it removes the expired files and counts
// the others (fleetUsed, fleetFiles).
func (s *FileStore) sweepRemote(ctx context.Context) error {
	var (
		expired []string
		files   int
		used    int64
	)
	s.mu.Lock()
	s.sinceListFiles, s.sinceListUsed = 0, 0
	s.mu.Unlock()
	_, err := callStore(ctx, s, dropTimeouts*s.timeout, "list the files", "", func(ctx context.Context) (struct{}, error) {
		expired, files, used = nil, 0, 0
		return struct{}{}, s.remote.list(ctx, func(id string, size int64, lastUse time.Time) {
			if s.expiredRemote(lastUse) {
				expired = append(expired, id)
				return
			}
			files++
			used += size
		})
	}, nil)
	if err != nil {
		return err
	}
	s.mu.Lock()
	// A change made meanwhile may or may not be in the listing: count it
	// (an upload counted twice is refused room for a while, never given
	// room it has not).
	s.fleetFiles, s.fleetUsed = files+max(s.sinceListFiles, 0), used+max(s.sinceListUsed, 0)
	tidy := s.now().Sub(s.tidied) >= stagedMaxAge(s.ttl)/4
	if tidy {
		s.tidied = s.now()
	}
	s.mu.Unlock()
	if tidy {
		n, err := s.remote.tidy(ctx, s.now().Add(-stagedMaxAge(s.ttl)))
		if n > 0 {
			s.log.Info("file store: removed content that uploads cut short left in the store", "count", n)
		}
		if err != nil {
			s.log.Warn("file store: tidying the store failed; it is tried again later", "err", err)
		}
	}
	for _, id := range expired {
		if err := s.removeRemote(ctx, id, -1); err != nil {
			return err
		}
	}
	if len(expired) > 0 {
		s.log.Info("file store: removed expired files from the store", "count", len(expired))
	}
	return nil
}

// stagedMaxAge is how long content staged by an upload may stay in the
// store without a file referring to it: what an upload cut short after
// its first part left is removed after that. An upload larger than one
// part that takes longer fails, its staged content removed underneath
// it (capacity_exhausted: send it again).
func stagedMaxAge(ttl time.Duration) time.Duration { return max(ttl, time.Hour) }

// countLocked counts files and bytes added to the store (negative:
// removed) by this instance.
func (s *FileStore) countLocked(files int, bytes int64) {
	s.fleetFiles += files
	s.fleetUsed += bytes
	s.sinceListFiles += files
	s.sinceListUsed += bytes
}

// StoreDown reports whether the shared store is failing (its breaker is
// open): uploads are refused and only cached files can be opened.
func (s *FileStore) StoreDown() bool { return s.remote != nil && s.guard.brk.isOpen() }

// Backend names the store: "dir", or "s3" for a shared store.
func (s *FileStore) Backend() string { return s.kind }

// parseBinarySize reads a whole number of bytes with an optional binary
// suffix: 512MiB, 2GiB, 4096.
func parseBinarySize(v string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"KiB", KiB}, {"MiB", MiB}, {"GiB", GiB}, {"TiB", 1 << 40}} {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			v, mult = num, u.n
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("want a size such as 512MiB, got %q", v)
	}
	return n * mult, nil
}
