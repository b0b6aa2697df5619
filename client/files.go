package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path"
	"path/filepath"
	"sync/atomic"

	"github.com/svc-sandbox/svc"
)

// Uploaded is the answer to an upload (POST /file).
type Uploaded struct {
	// FileID is the lowercase hex SHA-256 of the content: the file_id
	// of svc.File{FileID: ...} in tasks.
	FileID string `json:"file_id"`
	// Size is the size of the content in bytes.
	Size int64 `json:"size"`
	// AlreadyExists is true when the server held the content already.
	AlreadyExists bool `json:"already_exists"`
}

// source is a way to read a file's content again, to upload it again.
type source struct {
	name string
	open func() (io.ReadCloser, error)
}

// Upload streams the content of r to the server's file store under the
// file name name (stored as metadata; its extension gives the content
// type). Nothing is buffered: the content goes out as r yields it, as one
// multipart part named "file".
//
// The client does not remember r: on file_not_found, [Client.Execute]
// cannot upload this content again (see [Client.UploadBytes],
// [Client.UploadFile] and [Client.Remember] for uploads it can repeat).
// An attempt that failed is retried only when r is an io.Seeker (it is
// rewound to where it was) or nothing of r was read yet. Upload returns
// once it has stopped reading r.
func (c *Client) Upload(ctx context.Context, name string, r io.Reader) (Uploaded, error) {
	b := newStreamBody(name, r)
	var up Uploaded
	err := c.getJSON(ctx, http.MethodPost, "/file", b, &up)
	b.wait()
	if err != nil {
		return Uploaded{}, err
	}
	if !svc.ValidFileID(up.FileID) {
		return Uploaded{}, &svc.Error{Code: svc.CodeInternalError,
			Msg: fmt.Sprintf("client: POST /file: the answer has no valid file_id (%q)", up.FileID)}
	}
	return up, nil
}

// UploadBytes uploads data like Upload and remembers it: should the
// server lose the file (it expired, was deleted, or the request went to
// another instance), Execute uploads it again. The client keeps data, not
// a copy, until Forget or Delete; do not modify it meanwhile.
func (c *Client) UploadBytes(ctx context.Context, name string, data []byte) (Uploaded, error) {
	up, err := c.Upload(ctx, name, bytes.NewReader(data))
	if err != nil {
		return up, err
	}
	sum := sha256.Sum256(data)
	if want := hex.EncodeToString(sum[:]); up.FileID != want {
		return Uploaded{}, &svc.Error{Code: svc.CodeInternalError,
			Msg: fmt.Sprintf("client: POST /file: the server stored %s as %s, want its SHA-256 %s", name, up.FileID, want)}
	}
	c.Remember(up.FileID, name, func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
	return up, nil
}

// UploadFile uploads the file at path, named by its base name, and
// remembers the path: Execute reads the file again to upload it again,
// and refuses to when its content changed meanwhile.
func (c *Client) UploadFile(ctx context.Context, path string) (Uploaded, error) {
	f, err := os.Open(path)
	if err != nil {
		return Uploaded{}, &svc.Error{Code: svc.CodeInvalidRequest, Msg: "client: " + err.Error(), Err: err}
	}
	defer f.Close()
	up, err := c.Upload(ctx, filepath.Base(path), f)
	if err != nil {
		return up, err
	}
	c.Remember(up.FileID, filepath.Base(path), func() (io.ReadCloser, error) { return os.Open(path) })
	return up, nil
}

// Remember tells the client how to read the content of the stored file
// id again, so that Execute can upload it again on file_not_found; name
// is the file name it is uploaded under. open is called for each upload
// again; the content it yields must hash to id, else that upload fails.
func (c *Client) Remember(id, name string, open func() (io.ReadCloser, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sources[id] = source{name: name, open: open}
}

// Forget drops what the client remembers of the file id.
func (c *Client) Forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sources, id)
}

// reupload uploads the remembered file id again. It returns false when
// the client remembers nothing of id.
func (c *Client) reupload(ctx context.Context, id string) (bool, error) {
	c.mu.Lock()
	src, ok := c.sources[id]
	c.mu.Unlock()
	if !ok {
		return false, nil
	}
	rc, err := src.open()
	if err != nil {
		return true, &svc.Error{Code: svc.CodeFileNotFound,
			Msg: fmt.Sprintf("client: upload %s (%s) again: %v", src.name, id, err), Err: err}
	}
	defer rc.Close()
	up, err := c.Upload(ctx, src.name, rc)
	if err != nil {
		return true, err
	}
	if up.FileID != id {
		return true, &svc.Error{Code: svc.CodeFileNotFound,
			Msg: fmt.Sprintf("client: upload %s again: its content changed (it is now %s, the request refers to %s)", src.name, up.FileID, id)}
	}
	return true, nil
}

// List returns the stored files, newest first (GET /file).
func (c *Client) List(ctx context.Context) ([]svc.StoredFile, error) {
	var v struct {
		Files []svc.StoredFile `json:"files"`
	}
	if err := c.getJSON(ctx, http.MethodGet, "/file", nil, &v); err != nil {
		return nil, err
	}
	return v.Files, nil
}

// Download writes the content of the stored file id to w and returns its
// size. The content is checked against id (its SHA-256): a mismatch is an
// internal_error, after the bytes were written. An attempt is retried
// only before its first byte reached w. A file that is not stored is
// not_found.
func (c *Client) Download(ctx context.Context, id string, w io.Writer) (int64, error) {
	if err := checkID(id); err != nil {
		return 0, err
	}
	var n int64
	path := "/file/" + id
	err := c.do(ctx, call{method: http.MethodGet, path: path, handle: func(resp *http.Response) error {
		h := sha256.New()
		var werr error
		n, werr = copyHashed(w, resp.Body, h)
		switch {
		case werr == nil:
		case n == 0 && !errors.Is(werr, errWrite):
			return retryable{werr}
		default:
			return &svc.Error{Code: svc.CodeInternalError,
				Msg: fmt.Sprintf("client: GET %s: cut short after %d bytes", path, n), Err: werr}
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != id {
			return &svc.Error{Code: svc.CodeInternalError,
				Msg: fmt.Sprintf("client: GET %s: the content's SHA-256 is %s", path, got)}
		}
		return nil
	}})
	return n, err
}

// DownloadOutput writes the content of the collected output p of the
// result r (svc.Task.Outputs; p as the request named it, or in its normal
// form) to w, with [Client.Download], and returns its size. An output
// with an error entry is not_found, naming the reason; a path r has no
// output for is invalid_request. Outputs are stored on the instance that
// ran the request: behind a load balancer, send the request and the
// download under one [WithAffinity] context.
func (c *Client) DownloadOutput(ctx context.Context, r svc.Result, p string, w io.Writer) (int64, error) {
	o, ok := r.Outputs[p]
	if !ok {
		o, ok = r.Outputs[path.Clean(p)]
	}
	switch {
	case !ok:
		return 0, &svc.Error{Code: svc.CodeInvalidRequest, Msg: fmt.Sprintf("client: the result has no output %q", p)}
	case o.Error != "":
		return 0, &svc.Error{Code: svc.CodeNotFound, Msg: fmt.Sprintf("client: output %q: %s", p, o.Error)}
	}
	n, err := c.Download(ctx, o.FileID, w)
	if err == nil && n != o.Size {
		err = &svc.Error{Code: svc.CodeInternalError,
			Msg: fmt.Sprintf("client: output %q: %d bytes, the result says %d", p, n, o.Size)}
	}
	return n, err
}

// errWrite marks a failure of the caller's writer in copyHashed.
var errWrite = errors.New("write")

// copyHashed copies r to w and h. A failure of w wraps errWrite.
func copyHashed(w io.Writer, r io.Reader, h hash.Hash) (int64, error) {
	buf := make([]byte, 64<<10)
	var n int64
	for {
		k, rerr := r.Read(buf)
		if k > 0 {
			h.Write(buf[:k])
			m, werr := w.Write(buf[:k])
			n += int64(m)
			if werr == nil && m < k {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				return n, fmt.Errorf("%w: %w", errWrite, werr)
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// Delete deletes the stored file id (DELETE /file/{id}) and forgets it:
// Execute will not upload it again. A file that is not stored is
// not_found.
func (c *Client) Delete(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	c.Forget(id)
	return c.getJSON(ctx, http.MethodDelete, "/file/"+id, nil, nil)
}

// checkID refuses an id that is not a file id before it reaches a path.
func checkID(id string) error {
	if !svc.ValidFileID(id) {
		return &svc.Error{Code: svc.CodeInvalidRequest,
			Msg: fmt.Sprintf("client: file id %q is not 64 lowercase hex characters", id)}
	}
	return nil
}

// streamBody is an upload from a reader, as a multipart form written
// through a pipe while the request is sent.
type streamBody struct {
	name string
	r    io.Reader
	// seeker and start rewind r for another attempt; nil when r cannot
	// seek.
	seeker io.Seeker
	start  int64
	read   atomic.Bool // some of r was read
	opened bool
	done   chan struct{} // closed when the writer of the last attempt ends
}

func newStreamBody(name string, r io.Reader) *streamBody {
	b := &streamBody{name: name, r: r}
	if s, ok := r.(io.Seeker); ok {
		if off, err := s.Seek(0, io.SeekCurrent); err == nil {
			b.seeker, b.start = s, off
		}
	}
	return b
}

// errNoReplay is returned by open when the body cannot be sent again.
var errNoReplay = errors.New("client: the upload's reader was read and cannot be rewound")

func (b *streamBody) again() bool { return b.seeker != nil || !b.read.Load() }

// wait waits for the writer of the last attempt to end.
func (b *streamBody) wait() {
	if b.done != nil {
		<-b.done
	}
}

func (b *streamBody) open() (io.Reader, string, error) {
	if b.opened {
		b.wait()
		switch {
		case b.seeker != nil:
			if _, err := b.seeker.Seek(b.start, io.SeekStart); err != nil {
				return nil, "", fmt.Errorf("client: rewind the upload's reader: %w", err)
			}
		case b.read.Load():
			return nil, "", errNoReplay
		}
	}
	b.opened = true
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	hdr := make(textproto.MIMEHeader)
	hdr.Set("Content-Disposition", mime.FormatMediaType("form-data", map[string]string{"name": "file", "filename": b.name}))
	ct := mime.TypeByExtension(filepath.Ext(b.name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	hdr.Set("Content-Type", ct)
	done := make(chan struct{})
	b.done = done
	go func() {
		defer close(done)
		part, err := mw.CreatePart(hdr)
		if err == nil {
			_, err = io.Copy(part, readFlag{b.r, &b.read})
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr, mw.FormDataContentType(), nil
}

// readFlag sets read once a Read yields bytes.
type readFlag struct {
	r    io.Reader
	read *atomic.Bool
}

func (f readFlag) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if n > 0 {
		f.read.Store(true)
	}
	return n, err
}
