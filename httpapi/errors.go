package httpapi

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/svc-sandbox/svc"
)

// statuses is the one Code -> HTTP status table (spec section 7; API.md
// decides rate_limited: 429). A test walks svc.Codes() against it.
var statuses = map[svc.Code]int{
	svc.CodeInvalidRequest:     http.StatusBadRequest,
	svc.CodeUnauthorized:       http.StatusUnauthorized,
	svc.CodeNotFound:           http.StatusNotFound,
	svc.CodeFileNotFound:       http.StatusNotFound,
	svc.CodeCacheDisabled:      http.StatusConflict,
	svc.CodePayloadTooLarge:    http.StatusRequestEntityTooLarge,
	svc.CodeLimitsExceeded:     http.StatusUnprocessableEntity,
	svc.CodeProfileNotAllowed:  http.StatusUnprocessableEntity,
	svc.CodeRateLimited:        http.StatusTooManyRequests,
	svc.CodeSandboxSetupFailed: http.StatusInternalServerError,
	svc.CodeInternalError:      http.StatusInternalServerError,
	svc.CodeCapacityExhausted:  http.StatusServiceUnavailable,
	svc.CodeShuttingDown:       http.StatusServiceUnavailable,
	svc.CodeCancelled:          http.StatusServiceUnavailable,
	svc.CodeDeadlineExceeded:   http.StatusGatewayTimeout,
}

// Status returns the HTTP status of an error code, and false for a code
// the table does not know (answered as internal_error, 500).
func Status(c svc.Code) (int, bool) {
	s, ok := statuses[c]
	return s, ok
}

// genericMsg is the message of an error that carries none a client may see.
var genericMsg = map[svc.Code]string{
	svc.CodeInternalError:      "internal error",
	svc.CodeSandboxSetupFailed: "the sandbox could not be set up",
}

// errorBody is the body of every non-2xx response.
type errorBody struct {
	Error string   `json:"error"`
	Code  svc.Code `json:"code"`
}

// fail answers err as an error body with the status of its code. Only the
// Msg of an *svc.Error reaches the client; the cause of a server error is
// logged with the request id.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	h.failStatus(w, r, 0, err)
}

// failStatus is fail with another status than the code's, unless 0. (A
// method a path does not serve is invalid_request, but 405.)
func (h *Handler) failStatus(w http.ResponseWriter, r *http.Request, status int, err error) {
	code := svc.CodeOf(err)
	tableStatus, ok := statuses[code]
	if !ok {
		code, tableStatus = svc.CodeInternalError, http.StatusInternalServerError
	}
	if status == 0 {
		status = tableStatus
	}
	msg := ""
	var e *svc.Error
	if errors.As(err, &e) && e.Code == code && code != svc.CodeInternalError {
		msg = e.Msg
	}
	if msg == "" {
		msg = genericMsg[code]
	}
	if msg == "" {
		msg = string(code)
	}
	switch {
	case status == http.StatusInternalServerError:
		msg += " (request id " + requestIDOf(r) + ")"
		h.log.Error("request failed", "request_id", requestIDOf(r), "code", string(code), "err", err.Error())
	case errors.Unwrap(err) != nil:
		h.log.Info("request refused", "request_id", requestIDOf(r), "code", string(code), "err", err.Error())
	}
	if status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1")
	}
	if rec, ok := w.(*recorder); ok {
		rec.code = code
	}
	h.writeJSON(w, r, status, errorBody{Error: msg, Code: code})
}

// writeJSON answers v as JSON with status.
func (h *Handler) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		h.log.Error("encode response", "request_id", requestIDOf(r), "err", err.Error())
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody{Error: "internal error (request id " + requestIDOf(r) + ")", Code: svc.CodeInternalError})
		if rec, ok := w.(*recorder); ok {
			rec.code = svc.CodeInternalError
		}
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// tooLarge reports whether err comes from reading past an
// http.MaxBytesReader's limit.
func tooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

// retryAfter is a Retry-After value: whole seconds, at least 1.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

type requestIDKey struct{}

// requestID keeps an incoming x-request-id of 1 to 128 visible ASCII
// characters, and makes a new UUID otherwise.
func requestID(in string) string {
	if len(in) >= 1 && len(in) <= 128 {
		ok := true
		for i := 0; i < len(in); i++ {
			if in[i] < 0x21 || in[i] > 0x7e {
				ok = false
				break
			}
		}
		if ok {
			return in
		}
	}
	return uuid.NewString()
}

// requestIDOf returns the request id ServeHTTP gave r.
func requestIDOf(r *http.Request) string {
	id, _ := r.Context().Value(requestIDKey{}).(string)
	return id
}

// quote quotes a client-supplied string for a message, shortened.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.QuoteToASCII(s)
}
