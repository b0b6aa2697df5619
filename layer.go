package svc

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"path"
	"strings"
	"time"
)

// A layer is what a step left behind: its results and the change it made
// to the workspace. It is stored as one blob:
//
//	magic    8 bytes   "SVCLAYR" and the format version byte (layerVersion)
//	key      string    the step key the layer is stored under
//	results  string    JSON of the step's []Result, statistics included
//	entries            each: kind byte, then its fields; kind 0 ends them
//	digest   32 bytes  SHA-256 of every byte before it
//
// A string is its length as a uvarint, then its bytes. A path is the
// number of its leading bytes it shares with the previous entry's path
// (uvarint; "" before the first entry), then the rest of it (string):
// in walk order, each entry costs about its own name, whatever its
// depth. An entry is:
//
//	'w' whiteout  path                          remove path (a tree too)
//	'd' dir       path mode mtime               make the directory if missing
//	'l' symlink   path mode mtime target        replace path by the symlink
//	'f' file      path mode mtime size content  replace path by the file
//
// mode is the permission bits (uvarint, at most 07777); mtime is seconds
// (varint) and nanoseconds (uvarint); size is a uvarint followed by that
// many bytes. A path is workspace-relative and clean: not absolute, no
// ".." or "." component, no NUL; "." names the workspace itself and only
// a dir entry may use it. Entries are in the order they apply: whiteouts,
// then the rest with every directory before what it holds. checkEntry is
// the one rule of what an entry may be: the writer refuses to write an
// entry it fails (errNoLayer), and the reader refuses a blob that holds
// one (errCorruptLayer).
//
// Version 1 wrote every path whole, so a chain of n directories cost n²
// bytes; a blob of another version is a miss (errLayerVersion), removed
// and stored again, not a damaged layer.
//
// A step's collected outputs (Task.Outputs) have no part in its layer:
// its results are stored without them, and a replay reads them again from
// the workspace it leaves, which holds them byte for byte (outputs.go).
// A step with outputs has a layer of the same format as any other.
//
// The digest guards against damage, and the key inside it against a blob
// filed under the wrong key; neither makes a layer trustworthy. Replay
// places every entry beneath the workspace without following symlinks,
// whatever the layer says (request.applyLayer, layer_linux.go).
const (
	layerMagic   = "SVCLAYR"
	layerVersion = 2

	kindEnd      = 0
	kindWhiteout = 'w'
	kindDir      = 'd'
	kindSymlink  = 'l'
	kindFile     = 'f'

	layerDigestLen = sha256.Size
	maxLayerKey    = 1 << 10 // paths and targets are bounded by maxPathLen, results by the blob
)

// errLayerTooLarge is the error of a layer that is not stored for its
// size: over the workspace size, or over what the store may hold.
var errLayerTooLarge = errors.New("layer too large to store")

// errNoLayer wraps every reason a workspace is one no layer can hold: an
// entry that is not a file, directory or symlink, a path longer than
// maxPathLen, a walk over its bounds (maxTreePathBytes). The step is not
// stored, and that is no failure of the cache: it is logged and the
// request's stored_steps does not count it.
var errNoLayer = errors.New("no layer can hold the workspace")

func noLayer(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errNoLayer, fmt.Sprintf(format, args...))
}

// layerEntry is one entry of a layer.
type layerEntry struct {
	kind   byte
	path   string
	mode   uint32 // permission bits
	sec    int64  // mtime
	nsec   int64
	target string // symlink
	size   int64  // file
}

// layerWriter writes a layer blob to w, hashing it, and fails with
// errLayerTooLarge once the blob would pass limit bytes.
type layerWriter struct {
	w     *bufio.Writer
	h     hash.Hash
	n     int64
	limit int64
	err   error
	prev  string // the path of the last entry
	buf   [binary.MaxVarintLen64]byte
}

func newLayerWriter(w io.Writer, key string, results []byte, limit int64) *layerWriter {
	lw := &layerWriter{w: bufio.NewWriterSize(w, 64*KiB), h: sha256.New(), limit: limit}
	lw.write([]byte(layerMagic))
	lw.write([]byte{layerVersion})
	lw.str(key)
	lw.str(string(results))
	return lw
}

func (lw *layerWriter) write(p []byte) {
	if lw.err != nil {
		return
	}
	if lw.n+int64(len(p)) > lw.limit {
		lw.err = errLayerTooLarge
		return
	}
	lw.n += int64(len(p))
	lw.h.Write(p)
	_, lw.err = lw.w.Write(p)
}

func (lw *layerWriter) uvarint(v uint64) { lw.write(binary.AppendUvarint(lw.buf[:0], v)) }
func (lw *layerWriter) varint(v int64)   { lw.write(binary.AppendVarint(lw.buf[:0], v)) }

func (lw *layerWriter) str(s string) {
	lw.uvarint(uint64(len(s)))
	lw.write([]byte(s))
}

// entry writes e's header: everything but a file's content, which the
// caller writes with content. An entry the reader would refuse is not
// written: the error wraps errNoLayer.
func (lw *layerWriter) entry(e *layerEntry) error {
	if why := checkEntry(e); why != "" && lw.err == nil {
		lw.err = noLayer("%c %.64q: %s", e.kind, e.path, why)
	}
	return lw.writeEntry(e)
}

// writeEntry writes e's header as it is (the tests write bad entries).
func (lw *layerWriter) writeEntry(e *layerEntry) error {
	lw.write([]byte{e.kind})
	shared := commonPrefix(lw.prev, e.path)
	lw.uvarint(uint64(shared))
	lw.str(e.path[shared:])
	lw.prev = e.path
	if e.kind != kindWhiteout {
		lw.uvarint(uint64(e.mode))
		lw.varint(e.sec)
		lw.uvarint(uint64(e.nsec))
	}
	switch e.kind {
	case kindSymlink:
		lw.str(e.target)
	case kindFile:
		lw.uvarint(uint64(e.size))
	}
	return lw.err
}

// commonPrefix returns the number of leading bytes a and b share.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// content copies exactly n bytes of a file's content from r.
func (lw *layerWriter) content(r io.Reader, n int64) error {
	if lw.err != nil {
		return lw.err
	}
	if lw.n+n > lw.limit {
		lw.err = errLayerTooLarge
		return lw.err
	}
	c, err := io.CopyN(io.MultiWriter(lw.w, lw.h), r, n)
	lw.n += c
	switch {
	case err == io.EOF:
		lw.err = fmt.Errorf("file shrank while it was read (%d of %d bytes)", c, n)
	case err != nil:
		lw.err = err
	}
	return lw.err
}

// close ends the entries, writes the digest and flushes. It returns the
// size of the blob.
func (lw *layerWriter) close() (int64, error) {
	lw.write([]byte{kindEnd})
	if lw.err != nil {
		return 0, lw.err
	}
	sum := lw.h.Sum(nil)
	if lw.n+int64(len(sum)) > lw.limit {
		return 0, errLayerTooLarge
	}
	lw.n += int64(len(sum))
	if _, err := lw.w.Write(sum); err != nil {
		return 0, err
	}
	return lw.n, lw.w.Flush()
}

// errCorruptLayer wraps every reason a blob is not a valid layer.
var errCorruptLayer = errors.New("corrupt layer")

// errLayerVersion is the error of a blob of another format version: a
// layer an older (or newer) version stored, a miss rather than damage.
var errLayerVersion = errors.New("a layer of another format version")

func corruptLayer(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errCorruptLayer, fmt.Sprintf(format, args...))
}

// layer is a stored layer that verifyLayer accepted: its digest matched,
// it was stored under key, and every entry is well formed.
type layer struct {
	blob    io.ReaderAt
	size    int64
	results []Result
}

// verifyLayer reads the whole blob once: it checks the magic, the key,
// every entry (paths included) and the digest, and decodes the results.
// Any mismatch is an error wrapping errCorruptLayer.
func verifyLayer(blob io.ReaderAt, size int64, key string) (*layer, error) {
	if size < int64(len(layerMagic))+1+layerDigestLen {
		return nil, corruptLayer("%d bytes is too short", size)
	}
	h := sha256.New()
	body := size - layerDigestLen
	lr := newLayerReader(io.TeeReader(io.NewSectionReader(blob, 0, body), h))
	results, err := lr.header(key, true)
	if err != nil {
		return nil, err
	}
	for {
		e, err := lr.next()
		if err != nil {
			return nil, err
		}
		if e == nil {
			break
		}
		if e.kind == kindFile {
			if _, err := io.CopyN(io.Discard, lr.r, e.size); err != nil {
				return nil, corruptLayer("file %q: content ends early", e.path)
			}
		}
	}
	// Nothing may follow the end of the entries (and the tee has to see
	// every byte of the body to hash it).
	if n, err := io.Copy(io.Discard, lr.r); err != nil {
		return nil, err
	} else if n != 0 {
		return nil, corruptLayer("%d bytes after the last entry", n)
	}
	want := make([]byte, layerDigestLen)
	if _, err := blob.ReadAt(want, body); err != nil {
		return nil, err
	}
	if !bytes.Equal(h.Sum(nil), want) {
		return nil, corruptLayer("digest mismatch")
	}
	l := &layer{blob: blob, size: size}
	if err := json.Unmarshal(results, &l.results); err != nil {
		return nil, corruptLayer("results: %v", err)
	}
	return l, nil
}

// entries calls fn for each entry in order; for a file, content reads
// exactly its bytes. The entries are checked again as they are read: the
// blob may have changed since verifyLayer.
func (l *layer) entries(key string, fn func(e *layerEntry, content io.Reader) error) error {
	body := l.size - layerDigestLen
	lr := newLayerReader(io.NewSectionReader(l.blob, 0, body))
	if _, err := lr.header(key, false); err != nil {
		return err
	}
	for {
		e, err := lr.next()
		if err != nil || e == nil {
			return err
		}
		var content io.Reader
		if e.kind == kindFile {
			content = io.LimitReader(lr.r, e.size)
		}
		if err := fn(e, content); err != nil {
			return err
		}
		if content != nil {
			// fn may have stopped early; the next entry starts after it.
			if _, err := io.Copy(io.Discard, content); err != nil {
				return err
			}
		}
	}
}

// layerReader decodes the body of a layer blob.
type layerReader struct {
	r    *bufio.Reader
	prev string // the path of the last entry
}

func newLayerReader(r io.Reader) *layerReader {
	return &layerReader{r: bufio.NewReaderSize(r, 64*KiB)}
}

// header checks the magic, version and key and returns the results JSON,
// or skips it unless keep.
func (lr *layerReader) header(key string, keep bool) ([]byte, error) {
	magic := make([]byte, len(layerMagic)+1)
	if _, err := io.ReadFull(lr.r, magic); err != nil {
		return nil, corruptLayer("header: %v", err)
	}
	if string(magic[:len(layerMagic)]) != layerMagic {
		return nil, corruptLayer("not a layer")
	}
	if v := magic[len(layerMagic)]; v != layerVersion {
		return nil, fmt.Errorf("%w: version %d, not %d", errLayerVersion, v, layerVersion)
	}
	k, err := lr.str("key", maxLayerKey)
	if err != nil {
		return nil, err
	}
	if k != key {
		return nil, corruptLayer("stored under %s but made for %.64q", key, k)
	}
	if keep {
		return lr.bytes("results", 1<<62)
	}
	n, err := lr.uvarint("results")
	if err != nil {
		return nil, err
	}
	if c, err := io.CopyN(io.Discard, lr.r, int64(min(n, 1<<62))); err != nil {
		return nil, corruptLayer("results: %d of %d bytes", c, n)
	}
	return nil, nil
}

func (lr *layerReader) uvarint(what string) (uint64, error) {
	v, err := binary.ReadUvarint(lr.r)
	if err != nil {
		return 0, corruptLayer("%s: %v", what, err)
	}
	return v, nil
}

func (lr *layerReader) bytes(what string, max uint64) ([]byte, error) {
	n, err := lr.uvarint(what)
	if err != nil {
		return nil, err
	}
	if n > max {
		return nil, corruptLayer("%s: %d bytes is too long", what, n)
	}
	// Grow as the bytes arrive: a corrupt length must not allocate.
	var b bytes.Buffer
	if c, err := io.CopyN(&b, lr.r, int64(n)); err != nil {
		return nil, corruptLayer("%s: %d of %d bytes", what, c, n)
	}
	return b.Bytes(), nil
}

func (lr *layerReader) str(what string, max uint64) (string, error) {
	b, err := lr.bytes(what, max)
	return string(b), err
}

// next returns the next entry, or nil at the end. A file's content is
// left for the caller to read from lr.r.
func (lr *layerReader) next() (*layerEntry, error) {
	kind, err := lr.r.ReadByte()
	if err != nil {
		return nil, corruptLayer("entries: %v", err)
	}
	if kind == kindEnd {
		return nil, nil
	}
	switch kind {
	case kindWhiteout, kindDir, kindSymlink, kindFile:
	default:
		return nil, corruptLayer("unknown entry kind %#x", kind)
	}
	e := &layerEntry{kind: kind}
	shared, err := lr.uvarint("path")
	if err != nil {
		return nil, err
	}
	if shared > uint64(len(lr.prev)) {
		return nil, corruptLayer("path shares %d bytes with a path of %d", shared, len(lr.prev))
	}
	rest, err := lr.str("path", maxPathLen-shared)
	if err != nil {
		return nil, err
	}
	e.path = lr.prev[:shared] + rest
	lr.prev = e.path
	if kind != kindWhiteout {
		mode, err := lr.uvarint("mode")
		if err != nil {
			return nil, err
		}
		e.mode = uint32(min(mode, 1<<31)) // checkEntry refuses it whole
		if e.sec, err = binary.ReadVarint(lr.r); err != nil {
			return nil, corruptLayer("path %.64q: mtime: %v", e.path, err)
		}
		nsec, err := lr.uvarint("mtime")
		if err != nil {
			return nil, err
		}
		e.nsec = int64(min(nsec, 1<<62))
	}
	switch kind {
	case kindSymlink:
		if e.target, err = lr.str("target", maxPathLen); err != nil {
			return nil, err
		}
	case kindFile:
		size, err := lr.uvarint("size")
		if err != nil {
			return nil, err
		}
		e.size = int64(min(size, 1<<63-1))
	}
	if why := checkEntry(e); why != "" {
		return nil, corruptLayer("%c %.64q: %s", e.kind, e.path, why)
	}
	return e, nil
}

// checkEntry says what is wrong with e as an entry of a layer, or ""
// when nothing is: the rule the writer and the reader share.
func checkEntry(e *layerEntry) string {
	if why := checkLayerPath(e.path, e.kind); why != "" {
		return "path: " + why
	}
	if e.kind != kindWhiteout {
		switch {
		case e.mode > 0o7777:
			return fmt.Sprintf("mode %#o", e.mode)
		case e.nsec < 0 || e.nsec >= 1e9:
			return fmt.Sprintf("mtime nanoseconds %d", e.nsec)
		}
	}
	switch e.kind {
	case kindSymlink:
		if e.target == "" || len(e.target) >= maxPathLen || hasNUL(e.target) {
			return "bad symlink target"
		}
	case kindFile:
		if e.size < 0 || e.size > 1<<62 {
			return fmt.Sprintf("size %d", e.size)
		}
	}
	return ""
}

// checkLayerPath says what is wrong with the path of an entry of the
// given kind, or "" when nothing is.
func checkLayerPath(p string, kind byte) string {
	switch {
	case p == ".":
		if kind != kindDir {
			return "only a directory entry may name the workspace itself"
		}
		return ""
	case p == "":
		return "empty"
	case hasNUL(p):
		return "contains a NUL byte"
	case p[0] == '/':
		return "absolute"
	case len(p) > maxPathLen:
		return "too long"
	case path.Clean(p) != p:
		return "not in clean form"
	}
	for rest := p; rest != ""; {
		var c string
		c, rest, _ = strings.Cut(rest, "/")
		switch {
		case c == "..":
			return "leaves the workspace"
		case c == "." || c == "":
			return "not in clean form"
		case len(c) > maxPathComponent:
			return "component too long"
		}
	}
	return ""
}

// kindOther marks a tree node that no layer can hold: a FIFO, socket or
// device. A step that leaves one is not stored.
const kindOther = '?'

// A tree is a snapshot of the workspace: every entry by path, taken with
// lstat, never following a symlink. paths is in walk order: "." (the
// workspace itself) first, every directory before what it holds,
// siblings sorted.
type tree struct {
	paths []string
	nodes map[string]treeNode
	// taken is when the walk began. A node changed less than racyWindow
	// before it may change again without its times showing it (before
	// Linux 6.13 tmpfs stamps times from a clock that advances once a
	// tick, 10 ms at HZ=100), so such nodes count as changed even when
	// they look the same: git's "racily clean" entries.
	taken time.Time
	// pathBytes is the length of the paths check counted, together.
	pathBytes int64
}

// maxTreePathBytes bounds the paths of a snapshot together, and with
// them the memory of a walk whatever the tree's shape: 16,384 entries
// (the inodes of a 256 MiB workspace) of 1 KiB paths. A workspace past
// it is not stored.
const maxTreePathBytes = 16 * MiB

const racyWindow = 20 * time.Millisecond

// treeNode is what a snapshot keeps of one entry.
type treeNode struct {
	kind   byte   // kindDir, kindFile, kindSymlink or kindOther
	mode   uint32 // permission bits
	size   int64
	ino    uint64
	mtime  time.Time
	ctime  time.Time
	target string // symlink
}

func newTree() *tree {
	return &tree{nodes: make(map[string]treeNode), taken: time.Now()}
}

func (t *tree) add(p string, n treeNode) {
	t.paths = append(t.paths, p)
	t.nodes[p] = n
}

// check counts a node at p that the walk is about to keep, or says why
// the tree cannot take it, an error wrapping errNoLayer: a path no layer
// may hold (checkLayerPath, the reader's rule: one longer than
// maxPathLen, which bounds a walk's depth), or one past maxTreePathBytes.
// The walk calls it before it keeps a node or looks beneath it.
func (t *tree) check(p string, kind byte) error {
	if why := checkLayerPath(p, kind); why != "" {
		return noLayer("a path of %d bytes, %.64q: %s", len(p), p, why)
	}
	t.pathBytes += int64(len(p))
	if t.pathBytes > maxTreePathBytes {
		return noLayer("the paths of the workspace pass %d bytes together", maxTreePathBytes)
	}
	return nil
}

// diffTrees returns the entries of the layer that turns before into
// after: whiteouts of what went away or changed kind (only the top of a
// removed tree), then what is new or changed, each directory before what
// it holds. File entries carry their size; the capture reads the content.
func diffTrees(before, after *tree) ([]layerEntry, error) {
	var out []layerEntry
	gone := "" // the last removed directory; what it held is gone with it
	for _, p := range before.paths {
		if p == "." || gone != "" && strings.HasPrefix(p, gone+"/") {
			continue
		}
		b := before.nodes[p]
		if a, ok := after.nodes[p]; ok && a.kind == b.kind {
			continue
		}
		out = append(out, layerEntry{kind: kindWhiteout, path: p})
		if b.kind == kindDir {
			gone = p
		}
	}
	racy := before.taken.Add(-racyWindow)
	for _, p := range after.paths {
		a := after.nodes[p]
		if b, ok := before.nodes[p]; ok && b.kind == a.kind && b.mode == a.mode && b.size == a.size &&
			b.ino == a.ino && b.target == a.target && b.mtime.Equal(a.mtime) && b.ctime.Equal(a.ctime) &&
			b.ctime.Before(racy) {
			continue
		}
		if a.kind == kindOther {
			return nil, noLayer("%.64q is not a file, directory or symlink", p)
		}
		out = append(out, layerEntry{
			kind: a.kind, path: p, mode: a.mode, target: a.target, size: a.size,
			sec: a.mtime.Unix(), nsec: int64(a.mtime.Nanosecond()),
		})
	}
	return out, nil
}
