package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/google/uuid"

	"github.com/svc-sandbox/svc"
)

// Execute sends req to the server (POST /execute), as the envelope
// {"steps": [...], "cache": ..., "stop_on_failure": ...} or, when
// req.Legacy is set, as the bare array of steps, and returns the response
// (for a legacy request the bare array of step results, with
// Response.Legacy set). Task failures are outcomes in the response, as
// with [svc.Sandbox.Run]; an error means the server refused the request
// or could not run it.
//
// On file_not_found the files of req that the client can upload again
// (see [Client.UploadBytes]) are uploaded again and req is sent once
// more, all with the same [AffinityHeader]; when it can upload none of
// them, the error is returned as it came.
func (c *Client) Execute(ctx context.Context, req *svc.Request) (*svc.Response, error) {
	var v any = req
	if req.Legacy {
		v = req.Steps
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &svc.Error{Code: svc.CodeInvalidRequest, Msg: "client: encode the request: " + err.Error(), Err: err}
	}
	resp, err := c.execute(ctx, b)
	if !errors.Is(err, svc.ErrFileNotFound) || c.retry.Disabled {
		return resp, err
	}
	// Behind a load balancer, the uploads and the request must meet on
	// one instance: see AffinityHeader. A caller's affinity holds them
	// together already, with its downloads.
	if !hasAffinity(ctx) {
		ctx = withAffinity(ctx, uuid.NewString())
	}
	again := false
	for _, id := range fileIDs(req) {
		ok, uerr := c.reupload(ctx, id)
		if uerr != nil {
			if ctx.Err() != nil {
				return nil, uerr
			}
			return nil, &svc.Error{Code: svc.CodeFileNotFound,
				Msg: fmt.Sprintf("%s; uploading %s again failed: %s", errMsg(err), id, errMsg(uerr)), Err: uerr}
		}
		again = again || ok
	}
	if !again {
		return nil, err
	}
	return c.execute(ctx, b)
}

// Run runs steps as one request with the defaults of the server, the
// client-side counterpart of [svc.Run].
func (c *Client) Run(ctx context.Context, steps ...svc.Step) (*svc.Response, error) {
	return c.Execute(ctx, &svc.Request{Steps: steps})
}

// execute sends an encoded request under the retry policy.
func (c *Client) execute(ctx context.Context, body []byte) (*svc.Response, error) {
	var resp *svc.Response
	err := c.do(ctx, call{
		method: http.MethodPost, path: "/execute",
		body: bytesBody{body, "application/json"},
		handle: func(r *http.Response) error {
			data, err := io.ReadAll(r.Body)
			if err != nil {
				return retryable{err} // the answer broke off
			}
			if resp, err = svc.DecodeResponse(bytes.NewReader(data)); err != nil {
				var e *svc.Error
				if errors.As(err, &e) { // an error body with status 200: not from svc
					return err
				}
				return &svc.Error{Code: svc.CodeInternalError,
					Msg: "client: POST /execute: the answer is not an execute response", Err: err}
			}
			return nil
		},
	})
	return resp, err
}

// fileIDs returns the distinct file ids req refers to, in request order.
func fileIDs(req *svc.Request) []string {
	var ids []string
	for _, s := range req.Steps {
		for _, t := range s.Tasks {
			keys := make([]string, 0, len(t.Files))
			for k := range t.Files {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if id := t.Files[k].FileID; id != "" && !slices.Contains(ids, id) {
					ids = append(ids, id)
				}
			}
		}
	}
	return ids
}

// errMsg is the message of an *svc.Error, or err's text.
func errMsg(err error) string {
	var e *svc.Error
	if errors.As(err, &e) && e.Msg != "" {
		return e.Msg
	}
	return err.Error()
}
