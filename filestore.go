package svc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
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
	// The server defaults it to <state dir>/files.
	Dir string
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
}

// storedEntry is the index entry of a stored file; guarded by FileStore.mu.
type storedEntry struct {
	info    StoredFile
	lastUse time.Time
	// verified is the content file as Open last verified it; nil until
	// then. A file with the same identity, size and mtime is not rehashed.
	verified os.FileInfo
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
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
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
	go sweepEvery(sweepPeriod(s.ttl), s.stop, s.swept, s.sweepExpired)
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
	u, err := s.receive(ctx, r)
	if err != nil {
		return StoredFile{}, false, err
	}
	defer u.discard()
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
	if info, ok := s.reuse(hex.EncodeToString(h.Sum(nil))); ok {
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
}

// putBufs are the read buffers of uploads.
var putBufs = sync.Pool{New: func() any { return new([256 * KiB]byte) }}

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
	buf := putBufs.Get().(*[256 * KiB]byte)
	defer putBufs.Put(buf)
	h := sha256.New()
	for {
		if err := ctx.Err(); err != nil {
			return nil, &Error{Code: CodeOf(err), Msg: "upload: cancelled", Err: err}
		}
		select {
		case <-s.stop:
			return nil, errStoreClosed
		default:
		}
		// Never read past the first byte over the limit.
		n, rerr := r.Read(buf[:min(int64(len(buf)), s.maxPut+1-u.size)])
		if n > 0 {
			u.size += int64(n)
			if u.size > s.maxPut {
				return nil, &Error{Code: CodePayloadTooLarge,
					Msg: fmt.Sprintf("upload: the file is larger than the limit of %d bytes", s.maxPut)}
			}
			h.Write(buf[:n])
			if err := u.write(buf[:n]); err != nil {
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
	u.id = hex.EncodeToString(h.Sum(nil))
	if u.tmp != nil {
		err := u.tmp.Sync()
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
	if !u.s.reserve(int64(len(p))) {
		u.drop()
		return nil
	}
	u.reserved += int64(len(p))
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

// drop gives up keeping the content: the store is full.
func (u *upload) drop() {
	u.full = true
	u.discard()
}

// discard removes the temporary file, if any, and releases the reservation.
func (u *upload) discard() {
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

// List returns the stored files, newest first.
func (s *FileStore) List() []StoredFile {
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
func (s *FileStore) Usage() (files int, bytes int64) {
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
