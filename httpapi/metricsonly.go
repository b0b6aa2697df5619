package httpapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/svc-sandbox/svc"
)

// MetricsHandler serves GET (and HEAD) /metrics of h alone, without an
// API key, for a listener of its own that only Prometheus reaches
// (METRICS_ADDR of svc serve): a scrape configuration then needs no
// secret. It serves what GET /metrics of h serves; any other path answers
// 404 not_found, any other method 405. Its requests are neither counted
// in svc_http_* nor logged, and it goes on serving while h drains, as
// GET /metrics of h does.
func (h *Handler) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := requestID(r.Header.Get("X-Request-Id"))
		w.Header().Set("X-Request-Id", id)
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
		switch {
		case r.URL.Path != "/metrics" && r.URL.Path != "/api/v1/metrics":
			h.fail(w, r, &svc.Error{Code: svc.CodeNotFound, Msg: "no such path: " + quote(r.URL.Path) + "; this listener serves GET /metrics only"})
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			w.Header().Set("Allow", "GET, HEAD")
			h.failStatus(w, r, http.StatusMethodNotAllowed, &svc.Error{Code: svc.CodeInvalidRequest,
				Msg: fmt.Sprintf("method %s is not allowed on /metrics; allowed: GET, HEAD", quote(r.Method))})
		default:
			h.serveMetrics(w, r)
		}
	})
}
