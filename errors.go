package svc

import (
	"context"
	"errors"
)

// Code is a stable, machine-readable error code (spec section 7). Its string
// value is what the HTTP API sends in the "code" field of an error body.
type Code string

// The codes of spec section 7. Clients branch on these, never on messages.
const (
	CodeInvalidRequest     Code = "invalid_request"
	CodeUnauthorized       Code = "unauthorized"
	CodeNotFound           Code = "not_found"
	CodeFileNotFound       Code = "file_not_found"
	CodePayloadTooLarge    Code = "payload_too_large"
	CodeLimitsExceeded     Code = "limits_exceeded"
	CodeProfileNotAllowed  Code = "profile_not_allowed"
	CodeCapacityExhausted  Code = "capacity_exhausted"
	CodeRateLimited        Code = "rate_limited"
	CodeShuttingDown       Code = "shutting_down"
	CodeCancelled          Code = "cancelled"
	CodeDeadlineExceeded   Code = "deadline_exceeded"
	CodeSandboxSetupFailed Code = "sandbox_setup_failed"
	CodeCacheDisabled      Code = "cache_disabled"
	CodeInternalError      Code = "internal_error"
)

// Codes returns every code the library defines, in the order of spec
// section 7. The HTTP layer's status table is tested against it.
func Codes() []Code {
	return []Code{
		CodeInvalidRequest, CodeUnauthorized, CodeNotFound, CodeFileNotFound,
		CodePayloadTooLarge, CodeLimitsExceeded, CodeProfileNotAllowed,
		CodeCapacityExhausted, CodeRateLimited, CodeShuttingDown, CodeCancelled,
		CodeDeadlineExceeded, CodeSandboxSetupFailed, CodeCacheDisabled,
		CodeInternalError,
	}
}

// Error is the one error type of the library. Msg is safe to show to the
// client that made the request; Err is the underlying cause, for logs only.
//
// errors.Is(err, ErrFileNotFound) matches any *Error with the same Code.
type Error struct {
	Code Code
	Msg  string
	Err  error
}

// Sentinels for errors.Is. They match any *Error with the same Code.
var (
	ErrInvalidRequest     = &Error{Code: CodeInvalidRequest}
	ErrUnauthorized       = &Error{Code: CodeUnauthorized}
	ErrNotFound           = &Error{Code: CodeNotFound}
	ErrFileNotFound       = &Error{Code: CodeFileNotFound}
	ErrPayloadTooLarge    = &Error{Code: CodePayloadTooLarge}
	ErrLimitsExceeded     = &Error{Code: CodeLimitsExceeded}
	ErrProfileNotAllowed  = &Error{Code: CodeProfileNotAllowed}
	ErrCapacityExhausted  = &Error{Code: CodeCapacityExhausted}
	ErrRateLimited        = &Error{Code: CodeRateLimited}
	ErrShuttingDown       = &Error{Code: CodeShuttingDown}
	ErrCancelled          = &Error{Code: CodeCancelled}
	ErrDeadlineExceeded   = &Error{Code: CodeDeadlineExceeded}
	ErrSandboxSetupFailed = &Error{Code: CodeSandboxSetupFailed}
	ErrCacheDisabled      = &Error{Code: CodeCacheDisabled}
	ErrInternal           = &Error{Code: CodeInternalError}
)

// Error returns Msg (the code when Msg is empty), followed by the cause
// when there is one.
func (e *Error) Error() string {
	msg := e.Msg
	if msg == "" {
		msg = string(e.Code)
	}
	if e.Err != nil {
		return msg + ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same Code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// newError returns an *Error with code c and a client-safe message.
func newError(c Code, msg string, cause error) *Error {
	return &Error{Code: c, Msg: msg, Err: cause}
}

// fieldErr returns an invalid_request error for the value at path (see
// validate.go for the paths): "steps[2][0].cmd: empty".
func fieldErr(path, msg string) *Error {
	return newError(CodeInvalidRequest, path+": "+msg, nil)
}

// CodeOf returns the code of err: the Code of an *Error in its chain,
// cancelled or deadline_exceeded for the context errors, "" for nil, and
// internal_error for anything else.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	switch {
	case errors.As(err, &e):
		return e.Code
	case errors.Is(err, context.DeadlineExceeded):
		return CodeDeadlineExceeded
	case errors.Is(err, context.Canceled):
		return CodeCancelled
	}
	return CodeInternalError
}
