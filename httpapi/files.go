package httpapi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"

	"github.com/svc-sandbox/svc"
)

// multipartSlack is what an upload body may hold beyond the file itself:
// boundaries, part headers, small other parts.
const multipartSlack = 64 << 10

// uploadResponse is the body of POST /file.
type uploadResponse struct {
	FileID        string `json:"file_id"`
	Size          int64  `json:"size"`
	AlreadyExists bool   `json:"already_exists"`
}

// upload serves POST /file: the content of the multipart part "file" goes
// to the store as it arrives. 201 for a new file, 200 for one stored
// already.
func (h *Handler) upload(w http.ResponseWriter, r *http.Request) {
	if h.refuseWhileDraining(w, r) {
		return
	}
	h.uploads.Add(1)
	defer h.uploads.Add(-1)
	limit := h.sb.Limits().UploadFileLimit
	if h.declaredTooLarge(w, r, limit+multipartSlack, fmt.Sprintf("file: larger than the limit of %d bytes", limit)) {
		return
	}
	body := h.readBody(w, r)
	defer body.finish()
	r.Body = http.MaxBytesReader(w, body, limit+multipartSlack)
	mr, err := multipartReader(r)
	if err != nil {
		h.fail(w, r, &svc.Error{Code: svc.CodeInvalidRequest,
			Msg: `body: want multipart/form-data with a part named "file"`})
		return
	}
	for {
		part, err := mr.NextPart()
		switch {
		case errors.Is(err, io.EOF):
			h.fail(w, r, &svc.Error{Code: svc.CodeInvalidRequest, Msg: `body: no part named "file"`})
			return
		case err != nil:
			if !h.failBody(w, r, err) {
				h.fail(w, r, uploadError(err, limit))
			}
			return
		case part.FormName() != "file":
			part.Close()
			continue
		}
		// The limit holds whatever the store's own is.
		content := http.MaxBytesReader(w, part, limit)
		sf, exists, err := h.files.Put(r.Context(), content, part.FileName(), part.Header.Get("Content-Type"))
		if err != nil {
			if h.failBody(w, r, err) {
				return
			}
			if tooLarge(err) {
				err = uploadError(err, limit)
			}
			h.fail(w, r, err)
			return
		}
		status := http.StatusCreated
		if exists {
			status = http.StatusOK
		}
		h.writeJSON(w, r, status, uploadResponse{FileID: sf.ID, Size: sf.Size, AlreadyExists: exists})
		return
	}
}

// uploadBuffer is how much of an upload's body is read at a time:
// mime/multipart reads its source 4 KiB at a time, and each read of the
// body renews the idle deadline and may be a system call.
const uploadBuffer = 256 << 10

// multipartReader is r.MultipartReader, reading r.Body through a buffer
// of uploadBuffer bytes.
func multipartReader(r *http.Request) (*multipart.Reader, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, http.ErrNotMultipart
	}
	return multipart.NewReader(bufio.NewReaderSize(r.Body, uploadBuffer), params["boundary"]), nil
}

// uploadError turns an error of reading the client's multipart body into
// the error to answer.
func uploadError(err error, limit int64) error {
	if tooLarge(err) {
		return &svc.Error{Code: svc.CodePayloadTooLarge,
			Msg: fmt.Sprintf("file: larger than the limit of %d bytes", limit), Err: err}
	}
	return &svc.Error{Code: svc.CodeInvalidRequest, Msg: "body: malformed multipart/form-data", Err: err}
}

// listFiles serves GET /file, newest first.
func (h *Handler) listFiles(w http.ResponseWriter, r *http.Request) {
	files, err := h.files.ListFiles(r.Context())
	if err != nil {
		// A shared store that fails: 503 capacity_exhausted.
		h.fail(w, r, err)
		return
	}
	if files == nil {
		files = []svc.StoredFile{}
	}
	h.writeJSON(w, r, http.StatusOK, struct {
		Files []svc.StoredFile `json:"files"`
	}{files})
}

// fileID returns the {id} of the path, or answers invalid_request.
func (h *Handler) fileID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if !svc.ValidFileID(id) {
		h.fail(w, r, &svc.Error{Code: svc.CodeInvalidRequest,
			Msg: "id: " + quote(id) + " is not 64 lowercase hex characters"})
		return "", false
	}
	return id, true
}

// download serves GET /file/{id}: the bytes with their stored content
// type, their length and the id as ETag.
func (h *Handler) download(w http.ResponseWriter, r *http.Request) {
	id, ok := h.fileID(w, r)
	if !ok {
		return
	}
	f, sf, err := h.files.Open(id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer f.Close()
	ct := "application/octet-stream"
	if sf.ContentType != nil && *sf.ContentType != "" {
		ct = *sf.ContentType
	}
	hdr := w.Header()
	hdr.Set("Content-Type", ct)
	hdr.Set("Content-Length", strconv.FormatInt(sf.Size, 10))
	hdr.Set("ETag", `"`+id+`"`)
	hdr.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, f); err != nil {
		h.log.Info("download cut short", "request_id", requestIDOf(r), "err", err.Error())
	}
}

// deleteFile serves DELETE /file/{id}: 204, empty.
func (h *Handler) deleteFile(w http.ResponseWriter, r *http.Request) {
	id, ok := h.fileID(w, r)
	if !ok {
		return
	}
	if err := h.files.Delete(id); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
