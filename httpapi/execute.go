package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/svc-sandbox/svc"
)

// backstopGrace is how long past the queue and overall timeouts the
// handler waits for Sandbox.Run (which itself gives up 2 s past the
// overall deadline) before it answers deadline_exceeded anyway.
const backstopGrace = 3 * time.Second

// execute serves POST /execute: decode, run, answer the response or the
// error. Validation, execution slots, the overall deadline and
// cancellation are the Sandbox's.
func (h *Handler) execute(w http.ResponseWriter, r *http.Request) {
	if h.refuseWhileDraining(w, r) {
		return
	}
	lim := h.sb.Limits()
	if h.declaredTooLarge(w, r, lim.ExecuteBodyLimit, fmt.Sprintf("body: larger than the limit of %d bytes", lim.ExecuteBodyLimit)) {
		return
	}
	body := h.readBody(w, r)
	req, err := svc.DecodeRequest(http.MaxBytesReader(w, body, lim.ExecuteBodyLimit))
	body.finish()
	if err != nil {
		// The read error is the decode error's cause: check it first.
		if h.failBody(w, r, err) {
			return
		}
		if tooLarge(err) {
			err = &svc.Error{Code: svc.CodePayloadTooLarge,
				Msg: fmt.Sprintf("body: larger than the limit of %d bytes", lim.ExecuteBodyLimit)}
		}
		h.fail(w, r, err)
		return
	}
	resp, err := h.run(r.Context(), req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.m.executed(resp)
	h.writeJSON(w, r, http.StatusOK, resp)
}

// run calls Sandbox.Run under a backstop: should Run not return by the
// queue timeout (the longest it waits for slots; its overall deadline
// starts once it holds them) plus the overall timeout plus backstopGrace,
// the client gets deadline_exceeded
// all the same. Run then goes on in the background until its sandbox is
// gone (it is cancelled as soon as the handler returns), holding its
// execution slots until then.
func (h *Handler) run(ctx context.Context, req *svc.Request) (*svc.Response, error) {
	type result struct {
		resp *svc.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := h.sb.Run(ctx, req)
		done <- result{resp, err}
	}()
	overall := h.sb.Limits().OverallTimeout
	backstop := time.NewTimer(h.sb.Config().QueueTimeout + overall + backstopGrace)
	defer backstop.Stop()
	select {
	case res := <-done:
		return res.resp, res.err
	case <-backstop.C:
		return nil, &svc.Error{Code: svc.CodeDeadlineExceeded,
			Msg: fmt.Sprintf("the request overran its overall timeout of %v", overall)}
	}
}
