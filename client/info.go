package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/svc-sandbox/svc"
)

// Info is what a server says about itself (GET /info).
type Info struct {
	// Version is the server's module version, "devel" for a build
	// from a work tree.
	Version string
	// ImageID identifies the root filesystem the sandboxes see; the
	// step cache is shared only between instances with the same one.
	ImageID string
	// Arch is the server's GOARCH.
	Arch string
	// Toolchains are the detected or configured toolchains, as
	// name-version ("gcc-12").
	Toolchains []string
	// CgroupVersion is 1 or 2.
	CgroupVersion int
	// AllowedProfiles are the sandbox profiles tasks may ask for;
	// DefaultProfile is the profile of tasks that name none.
	AllowedProfiles []svc.Profile
	DefaultProfile  svc.Profile
	// Cache describes the step cache.
	Cache CacheInfo
	// Limits are the limits every task and request is held to.
	Limits svc.Limits
	// QueueTimeout is how long the server lets a request wait for
	// execution slots before it answers capacity_exhausted
	// (QUEUE_TIMEOUT_MS); 0 when it answers at once.
	QueueTimeout time.Duration
}

// CacheInfo describes a server's step cache.
type CacheInfo struct {
	// Enabled is false when the server runs without a step cache.
	Enabled bool
	// Namespace is the cache namespace; instances share layers within
	// one.
	Namespace string
	// TTL is how long a cached layer is kept.
	TTL time.Duration
	// Backend is "dir" or "redis".
	Backend string
}

// infoJSON is the wire form of GET /info (API.md).
type infoJSON struct {
	Version         string   `json:"version"`
	ImageID         string   `json:"image_id"`
	Arch            string   `json:"arch"`
	Toolchains      []string `json:"toolchains"`
	CgroupVersion   int      `json:"cgroup_version"`
	SandboxProfiles struct {
		Allowed []svc.Profile `json:"allowed"`
		Default svc.Profile   `json:"default"`
	} `json:"sandbox_profiles"`
	Cache struct {
		Enabled   bool   `json:"enabled"`
		Namespace string `json:"namespace"`
		TTLSecs   int64  `json:"ttl_secs"`
		Backend   string `json:"backend"`
	} `json:"cache"`
	Limits         svc.Limits `json:"limits"`
	QueueTimeoutMs int64      `json:"queue_timeout_ms"`
}

// Info returns the server's capabilities and effective limits (GET /info).
func (c *Client) Info(ctx context.Context) (*Info, error) {
	var v infoJSON
	if err := c.getJSON(ctx, http.MethodGet, "/info", nil, &v); err != nil {
		return nil, err
	}
	return &Info{
		Version: v.Version, ImageID: v.ImageID, Arch: v.Arch, Toolchains: v.Toolchains,
		CgroupVersion:   v.CgroupVersion,
		AllowedProfiles: v.SandboxProfiles.Allowed, DefaultProfile: v.SandboxProfiles.Default,
		Cache: CacheInfo{Enabled: v.Cache.Enabled, Namespace: v.Cache.Namespace,
			TTL: time.Duration(v.Cache.TTLSecs) * time.Second, Backend: v.Cache.Backend},
		Limits: v.Limits, QueueTimeout: time.Duration(v.QueueTimeoutMs) * time.Millisecond,
	}, nil
}

// Health asks whether the server takes work (GET /health): nil when it
// does, a shutting_down error while it drains. It is sent once, never
// retried: its answer is the point, for a load balancer's probe say.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, call{method: http.MethodGet, path: "/health", noRetry: true,
		handle: func(*http.Response) error { return nil }})
}

// Metrics returns the server's metrics in the Prometheus text format
// (GET /metrics).
func (c *Client) Metrics(ctx context.Context) (string, error) {
	var text string
	err := c.do(ctx, call{method: http.MethodGet, path: "/metrics", handle: func(r *http.Response) error {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return retryable{err}
		}
		text = string(b)
		return nil
	}})
	return text, err
}

// DropCache drops every layer of the server's cache namespace, on every
// instance sharing it (DELETE /cache), and returns how many it dropped.
// A server without a step cache answers cache_disabled.
func (c *Client) DropCache(ctx context.Context) (int, error) {
	var v struct {
		DroppedLayers *int `json:"dropped_layers"`
	}
	if err := c.getJSON(ctx, http.MethodDelete, "/cache", nil, &v); err != nil {
		return 0, err
	}
	if v.DroppedLayers == nil {
		return 0, &svc.Error{Code: svc.CodeInternalError, Msg: fmt.Sprintf("client: DELETE /cache: the answer has no %q", "dropped_layers")}
	}
	return *v.DroppedLayers, nil
}

// Languages returns how to build and run a source in each language of
// the server's image (GET /languages): the recipe svctest's programs
// follow, for each toolchain /info lists. A judge in any language builds
// a submission from it without hand-written commands.
func (c *Client) Languages(ctx context.Context) ([]svc.Language, error) {
	var v struct {
		Languages []svc.Language `json:"languages"`
	}
	if err := c.getJSON(ctx, http.MethodGet, "/languages", nil, &v); err != nil {
		return nil, err
	}
	return v.Languages, nil
}
