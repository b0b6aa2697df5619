// Package httpapi serves the svc HTTP API (docs/http-api.md) on top of a
// [svc.Sandbox] and its [svc.FileStore], with the standard library's
// net/http. It holds the wire contract and nothing of the sandbox: it
// imports the public svc package only.
//
//	sb, _ := svc.New(svc.Config{Files: store})
//	h, _ := httpapi.New(httpapi.Config{Sandbox: sb, Keys: keys})
//	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: h}
//	go srv.ListenAndServe()
//	...
//	h.Shutdown(ctx, srv) // drain, kill the sandboxes, answer, stop serving
//
// # Endpoints
//
// POST /execute, POST and GET /file, GET and DELETE /file/{id}, DELETE
// /cache, GET /info, GET /languages, GET /metrics, GET or HEAD /health and GET
// /openapi.json, each also under /api/v1. Every endpoint but /health and
// /openapi.json needs an API key. GET /openapi.json serves the OpenAPI 3.1
// document of the API ([svc.OpenAPI], as JSON). An unknown path
// answers 404 not_found, a method a path does not serve 405
// invalid_request with an Allow header; every non-2xx response has the body
// {"error": "<message>", "code": "<code>"}, with the status of the one
// table of this package (see [Status]). Every response carries
// x-request-id, which the log lines of the request carry too.
//
// # Errors
//
// Only the Msg of an [*svc.Error] reaches a client; its cause, and any
// other error, is logged with the request id and answered with a generic
// message.
//
// # Concurrency
//
// A Handler is safe for concurrent use. The sandbox takes the execution
// slots of a request and holds them until the request's sandbox is gone.
// When too few are free, the request waits for them in arrival order for
// the sandbox's [svc.Config.QueueTimeout] (QUEUE_TIMEOUT_MS), then answers
// capacity_exhausted; with 0, the default, it answers at once. A client
// that disconnects cancels its request: a waiting one leaves the queue
// and never runs, a running one is killed. [Handler.Shutdown] answers the
// waiting requests shutting_down at once.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/svc-sandbox/svc"
)

// Config configures a Handler. Sandbox is required; the other zero values
// are documented on each field.
type Config struct {
	// Sandbox runs the requests. Its Config().Files is the store of the
	// file endpoints and must be set.
	Sandbox *svc.Sandbox

	// Keys are the accepted API keys (Authorization: Bearer <key>).
	// Several keys allow rotation: add the new key, move the clients,
	// drop the old one. Empty keys are ignored; with none, New fails
	// unless NoAuth is set.
	Keys []string
	// NoAuth serves every endpoint without a key (loopback use only).
	NoAuth bool
	// RateLimitPerMinute, when positive, gives each key a token bucket of
	// that many requests per minute with that burst; 0 is no limit.
	RateLimitPerMinute int

	// Cache is the step cache; nil means it is disabled: /info says so
	// and DELETE /cache answers cache_disabled.
	Cache Cache
	// CacheInfo describes the cache settings in /info.
	CacheInfo CacheInfo

	// Version, ImageID and Toolchains are reported by /info. Version ""
	// is "devel".
	Version    string
	ImageID    string
	Toolchains []string

	// BodyIdleTimeout is how long a request body (POST /execute, POST
	// /file) may pause: a client that sends nothing for that long loses
	// the request, answered 408 cancelled (BODY_IDLE_TIMEOUT_MS). Each
	// read that receives bytes starts it again. 0 is 10 s.
	BodyIdleTimeout time.Duration

	// Now is the clock of rate limiting; nil is time.Now.
	Now func() time.Time
	// Logger receives one line per request and the causes of server
	// errors; nil discards them.
	Logger *slog.Logger
}

// Cache is the step cache as the HTTP API sees it.
type Cache interface {
	// Drop removes every layer of the cache's namespace and returns how
	// many it removed.
	Drop(ctx context.Context) (int, error)
	// Stats returns the cache's counters since it was opened.
	Stats() svc.CacheStats
}

// *svc.StepCache is the cache of a real server.
var _ Cache = (*svc.StepCache)(nil)

// CacheInfo is the "cache" object of /info. Enabled is set by the Handler:
// true exactly when Config.Cache is not nil.
type CacheInfo struct {
	Enabled   bool   `json:"enabled"`
	Namespace string `json:"namespace"`
	TTLSecs   int64  `json:"ttl_secs"`
	Backend   string `json:"backend"`
	// TimeoutMs bounds each call to the store (CACHE_TIMEOUT_MS).
	TimeoutMs int64 `json:"timeout_ms"`
}

// Handler is the HTTP API. Create it with New; it is safe for concurrent
// use.
type Handler struct {
	sb     *svc.Sandbox
	files  *svc.FileStore
	cache  Cache
	auth   *authenticator
	limits *rateLimiter // nil: no rate limit
	now    func() time.Time
	log    *slog.Logger
	m      *metricSet
	info   []byte // the /info body, fixed at New
	langs  []byte // the /languages body, fixed at New
	routes []route

	bodyIdle time.Duration

	// draining is set by Drain (drain.go); bodies are the request
	// bodies being read, which it cuts; active counts the requests
	// being served, which Shutdown waits for.
	draining atomic.Bool
	bodies   bodySet
	active   inFlight
	uploads  atomic.Int64 // uploads in flight
}

// New returns a Handler for cfg.
func New(cfg Config) (*Handler, error) {
	if cfg.Sandbox == nil {
		return nil, errors.New("httpapi: Config.Sandbox is nil")
	}
	h := &Handler{
		sb:    cfg.Sandbox,
		files: cfg.Sandbox.Config().Files,
		cache: cfg.Cache,
		now:   cfg.Now,
		log:   cfg.Logger,
	}
	if h.files == nil {
		return nil, errors.New("httpapi: the sandbox has no file store (svc.Config.Files)")
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.log == nil {
		h.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.BodyIdleTimeout < 0 {
		return nil, fmt.Errorf("httpapi: BodyIdleTimeout is negative: %v", cfg.BodyIdleTimeout)
	}
	h.bodyIdle = cfg.BodyIdleTimeout
	if h.bodyIdle == 0 {
		h.bodyIdle = defaultBodyIdleTimeout
	}
	var err error
	if h.auth, err = newAuthenticator(cfg.Keys, cfg.NoAuth); err != nil {
		return nil, err
	}
	if cfg.RateLimitPerMinute < 0 {
		return nil, fmt.Errorf("httpapi: RateLimitPerMinute is negative: %d", cfg.RateLimitPerMinute)
	}
	if cfg.RateLimitPerMinute > 0 {
		h.limits = newRateLimiter(cfg.RateLimitPerMinute)
	}
	if h.info, err = h.infoBody(cfg); err != nil {
		return nil, err
	}
	if _, err := openAPIJSON(); err != nil {
		return nil, err
	}
	h.m = newMetrics(h)
	h.routes = h.table()
	return h, nil
}

// A route is one path of the API and the methods it serves.
type route struct {
	pattern string // canonical path; "/file/{id}" takes the id
	public  bool   // served without an API key
	methods map[string]http.HandlerFunc
}

func (h *Handler) table() []route {
	return []route{
		{"/execute", false, map[string]http.HandlerFunc{"POST": h.execute}},
		{"/file", false, map[string]http.HandlerFunc{"POST": h.upload, "GET": h.listFiles}},
		{"/file/{id}", false, map[string]http.HandlerFunc{"GET": h.download, "DELETE": h.deleteFile}},
		{"/cache", false, map[string]http.HandlerFunc{"DELETE": h.dropCache}},
		{"/info", false, map[string]http.HandlerFunc{"GET": h.serveInfo}},
		{"/languages", false, map[string]http.HandlerFunc{"GET": h.serveLanguages}},
		{"/metrics", false, map[string]http.HandlerFunc{"GET": h.serveMetrics}},
		{"/health", true, map[string]http.HandlerFunc{"GET": h.health, "HEAD": h.health}},
		{"/openapi.json", true, map[string]http.HandlerFunc{"GET": h.serveOpenAPI}},
	}
}

// match returns the route of path (canonical or under /api/v1) and the
// {id} it names, or nil.
func (h *Handler) match(path string) (*route, string) {
	if rest, ok := strings.CutPrefix(path, "/api/v1"); ok && strings.HasPrefix(rest, "/") {
		path = rest
	}
	for i := range h.routes {
		rt := &h.routes[i]
		if prefix, ok := strings.CutSuffix(rt.pattern, "{id}"); ok {
			if id, ok := strings.CutPrefix(path, prefix); ok && id != "" && !strings.Contains(id, "/") {
				return rt, id
			}
		} else if path == rt.pattern {
			return rt, ""
		}
	}
	return nil, ""
}

// allow is the Allow header of rt.
func (rt *route) allow() string {
	ms := make([]string, 0, len(rt.methods))
	for m := range rt.methods {
		ms = append(ms, m)
	}
	slices.Sort(ms)
	return strings.Join(ms, ", ")
}

// ServeHTTP routes, authenticates, rate-limits and serves r. Every
// response carries x-request-id and is counted and logged.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := requestID(r.Header.Get("X-Request-Id"))
	w.Header().Set("X-Request-Id", id)
	rec := &recorder{ResponseWriter: w}
	r = r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
	rt, fileID := h.match(r.URL.Path)
	h.active.enter()
	defer func() {
		h.active.leave()
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			h.log.Error("panic", "request_id", id, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if !rec.wrote {
				h.fail(rec, r, &svc.Error{Code: svc.CodeInternalError})
			}
		}
		h.finish(rec, r, rt, time.Since(start))
	}()

	if rt == nil {
		h.fail(rec, r, &svc.Error{Code: svc.CodeNotFound, Msg: "no such path: " + quote(r.URL.Path)})
		return
	}
	serve, ok := rt.methods[r.Method]
	if !ok {
		rec.Header().Set("Allow", rt.allow())
		h.failStatus(rec, r, http.StatusMethodNotAllowed, &svc.Error{Code: svc.CodeInvalidRequest,
			Msg: fmt.Sprintf("method %s is not allowed on %s; allowed: %s", quote(r.Method), rt.pattern, rt.allow())})
		return
	}
	if !rt.public && !h.admit(rec, r) {
		return
	}
	if fileID != "" {
		r.SetPathValue("id", fileID)
	}
	serve(rec, r)
}

// admit checks the API key and the key's rate limit, answering 401 or 429
// when the request may not go on.
func (h *Handler) admit(w http.ResponseWriter, r *http.Request) bool {
	key, err := h.auth.check(r.Header.Get("Authorization"))
	if err != nil {
		w.Header().Set("WWW-Authenticate", "Bearer")
		h.fail(w, r, err)
		return false
	}
	if h.limits == nil {
		return true
	}
	wait, ok := h.limits.allow(key, h.now())
	if !ok {
		h.m.rateLimited.Inc()
		w.Header().Set("Retry-After", retryAfter(wait))
		h.fail(w, r, &svc.Error{Code: svc.CodeRateLimited,
			Msg: fmt.Sprintf("rate limit of this API key exceeded; retry in %s s", retryAfter(wait))})
		return false
	}
	return true
}

// finish counts and logs a served request.
func (h *Handler) finish(rec *recorder, r *http.Request, rt *route, d time.Duration) {
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	path := "other"
	if rt != nil {
		path = rt.pattern
	}
	h.m.response(status, rec.code, path, d)
	h.log.Info("request",
		"request_id", requestIDOf(r), "method", r.Method, "path", r.URL.Path,
		"status", status, "code", string(rec.code), "duration_ms", d.Milliseconds())
}

// recorder remembers the status and error code of a response.
type recorder struct {
	http.ResponseWriter
	status int
	code   svc.Code
	wrote  bool
}

func (rec *recorder) WriteHeader(status int) {
	if !rec.wrote {
		rec.status, rec.wrote = status, true
	}
	rec.ResponseWriter.WriteHeader(status)
}

func (rec *recorder) Write(b []byte) (int, error) {
	if !rec.wrote {
		rec.status, rec.wrote = http.StatusOK, true
	}
	return rec.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the underlying writer.
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }
