package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"runtime"

	"github.com/svc-sandbox/svc"
)

// info is the body of GET /info (API.md).
type info struct {
	Version         string       `json:"version"`
	ImageID         string       `json:"image_id"`
	Arch            string       `json:"arch"`
	Toolchains      []string     `json:"toolchains"`
	CgroupVersion   int          `json:"cgroup_version"`
	SandboxProfiles profilesInfo `json:"sandbox_profiles"`
	Cache           CacheInfo    `json:"cache"`
	Limits          svc.Limits   `json:"limits"`
	// QueueTimeoutMs is QUEUE_TIMEOUT_MS (API.md, "Waiting for a slot").
	QueueTimeoutMs int64 `json:"queue_timeout_ms"`
	// BodyIdleTimeoutMs is BODY_IDLE_TIMEOUT_MS (Config.BodyIdleTimeout).
	BodyIdleTimeoutMs int64 `json:"body_idle_timeout_ms"`
}

type profilesInfo struct {
	Allowed []svc.Profile `json:"allowed"`
	Default svc.Profile   `json:"default"`
}

// infoBody encodes /info once, but for the state of the Go build cache,
// which serveInfo adds to each answer: nothing else in it changes while
// the Handler lives.
func (h *Handler) infoBody(cfg Config) ([]byte, error) {
	sc := h.sb.Config()
	in := info{
		Version:         cfg.Version,
		ImageID:         cfg.ImageID,
		Arch:            runtime.GOARCH,
		Toolchains:      cfg.Toolchains,
		CgroupVersion:   h.sb.CgroupVersion(),
		SandboxProfiles: profilesInfo{Allowed: sc.AllowedProfiles, Default: sc.DefaultProfile},
		Cache:           cfg.CacheInfo,
		Limits:          h.sb.Limits(),
		QueueTimeoutMs:  sc.QueueTimeout.Milliseconds(),

		BodyIdleTimeoutMs: h.bodyIdle.Milliseconds(),
	}
	in.Cache.Enabled = cfg.Cache != nil
	if in.Version == "" {
		in.Version = "devel"
	}
	if in.Toolchains == nil {
		in.Toolchains = []string{}
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	if h.langs, err = languagesBody(in.Toolchains); err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// goBuildCacheInfo is the "go_build_cache" object of /info, the one part
// of it that changes while the Handler lives: the Go build cache is
// prepared after start.
type goBuildCacheInfo struct {
	State svc.GoBuildCacheState `json:"state"`
}

// serveInfo serves GET /info: the body encoded at New, its last member
// the state of the Go build cache now.
func (h *Handler) serveInfo(w http.ResponseWriter, r *http.Request) {
	gc, err := json.Marshal(goBuildCacheInfo{State: h.sb.GoBuildCacheState()})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	var body bytes.Buffer // h.info is shared: not appended to
	body.Write(bytes.TrimSuffix(h.info, []byte("}\n")))
	body.WriteString(`,"go_build_cache":`)
	body.Write(gc)
	body.WriteString("}\n")
	w.Write(body.Bytes())
}

// health serves GET and HEAD /health: 200 {"status":"ok"}, or 503
// shutting_down once the Handler drains.
func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	if h.refuseWhileDraining(w, r) {
		return
	}
	h.writeJSON(w, r, http.StatusOK, struct {
		Status string `json:"status"`
	}{"ok"})
}

// serveMetrics serves GET /metrics in the Prometheus text format.
func (h *Handler) serveMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	h.m.write(w)
}

// dropCache serves DELETE /cache: 200 {"dropped_layers": N}, or 409
// cache_disabled without a cache.
func (h *Handler) dropCache(w http.ResponseWriter, r *http.Request) {
	if h.cache == nil {
		h.fail(w, r, &svc.Error{Code: svc.CodeCacheDisabled, Msg: "the step cache is disabled on this instance"})
		return
	}
	n, err := h.cache.Drop(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeJSON(w, r, http.StatusOK, struct {
		DroppedLayers int `json:"dropped_layers"`
	}{n})
}
