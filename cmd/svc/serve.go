package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/redis/go-redis/v9"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/httpapi"
)

const serveUsage = `usage: svc serve [flags]

Serves the HTTP API (docs/http-api.md in the svc repository; GET
/openapi.json describes it) until SIGTERM or SIGINT, then drains: /health
answers 503 until the process exits, running requests are killed and
request bodies still arriving are cut, all answering shutting_down, and the
process exits 0 within SHUTDOWN_TIMEOUT_MS whatever its clients do. Logs are JSON lines on standard
error. With no API key configured, one is generated and logged once.

Every flag is also the environment variable in parentheses; a flag wins
over the environment, the environment over --config.

`

func serveCmd(args []string, stderr io.Writer) error {
	fs := pflag.NewFlagSet("svc serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Usage = func() { fmt.Fprint(stderr, serveUsage+fs.FlagUsages()) }
	settings := register(fs, allSettings)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("serve: unexpected arguments %q", fs.Args())
	}
	var o options
	if err := settings.apply(fs, &o); err != nil {
		return err
	}
	if err := o.check(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal ends the process at once
	}()
	return serve(ctx, &o, slog.New(slog.NewJSONHandler(stderr, nil)), nil)
}

// check reports the problems that involve several settings.
func (o *options) check() error {
	lim := o.Limits
	if lim.MaxParallelTasks == 0 {
		lim.MaxParallelTasks = svc.DefaultLimits().MaxParallelTasks
	}
	if lim.MaxConcurrency != 0 && lim.MaxParallelTasks > lim.MaxConcurrency {
		return fmt.Errorf("setting MAX_PARALLEL_TASKS (%d) is greater than MAX_CONCURRENCY (%d): a parallel step could never run",
			lim.MaxParallelTasks, lim.MaxConcurrency)
	}
	return nil
}

// serve runs the server of o until ctx ends, then shuts it down within
// o.shutdownTimeout. ready, if not nil, is called with the address once
// the server accepts connections.
func serve(ctx context.Context, o *options, log *slog.Logger, ready func(addr string)) (err error) {
	o.Logger = log
	stateDir, err := filepath.Abs(o.StateDir)
	if err != nil {
		return fmt.Errorf("setting STATE_DIR: %w", err)
	}
	// The file store, under the state dir by default, is opened before
	// the Sandbox takes the state dir's lock: a second instance on the
	// same state dir hears of the state dir, not of the file store.
	if err := stateDirFree(stateDir); err != nil {
		return err
	}
	keys := append(append([]string(nil), o.apiKeys...), o.apiKeysFile...)
	switch {
	case o.noAuth:
		log.Warn("authentication is off (NO_AUTH): anyone who reaches the listen address can run programs; use it on loopback only",
			"listen", o.listen, "ignored_keys", len(keys))
		keys = nil
	case len(keys) == 0:
		key := newKey()
		keys = []string{key}
		log.Warn("no API key configured (API_KEYS, API_KEYS_FILE): generated one for this run; send it as Authorization: Bearer <key>",
			"api_key", key)
	}

	storeDir := o.fileStoreDir
	if storeDir == "" {
		storeDir = filepath.Join(stateDir, "files")
	}
	uploadLimit := o.Limits.UploadFileLimit
	if uploadLimit == 0 {
		uploadLimit = svc.DefaultLimits().UploadFileLimit
	}
	files, err := svc.OpenFileStore(svc.FileStoreConfig{
		Dir: storeDir, URL: o.fileStoreURL, MaxBytes: o.fileStoreMax, TTL: o.fileTTL,
		MaxUploadBytes: uploadLimit, MaxConcurrentUploads: o.maxUploads, Logger: log,
	})
	if err != nil {
		if o.fileStoreURL != "" {
			// The URL holds no secret: keys come from the environment.
			return fmt.Errorf("file store (FILESTORE_URL %s, FILESTORE_DIR %s): %w", o.fileStoreURL, storeDir, err)
		}
		return fmt.Errorf("file store (FILESTORE_DIR %s): %w", storeDir, err)
	}
	defer files.Close()
	o.Files = files

	imageID, toolchains, err := o.image()
	if err != nil {
		return err
	}
	cacheURL := o.cacheURL
	if cacheURL == nil {
		cacheURL, _ = parseCacheURL("dir://" + filepath.Join(stateDir, "cache"))
	}
	if o.cacheEnabled {
		redis.SetLogger(redisLogger{log})
		cache, err := svc.OpenCache(svc.CacheConfig{
			URL: cacheURL.String(), Namespace: o.cacheNamespace, TTL: o.cacheTTL, Timeout: o.cacheTimeout,
			ImageID: imageID, Toolchains: toolchains, Logger: log,
		})
		if err != nil {
			return fmt.Errorf("step cache (CACHE_URL %s): %w", cacheURL.Redacted(), err)
		}
		defer cache.Close()
		o.Cache = cache
	}

	o.GoBuildCache, o.ImageID = o.goBuildCacheDir(stateDir), imageID
	// New removes whatever a crashed instance with this state dir left.
	sb, err := svc.New(o.Config)
	if err != nil {
		return err
	}
	shutDown := false
	defer func() {
		if !shutDown {
			ctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
			defer cancel()
			sb.Close(ctx)
		}
	}()

	logConcurrency(log, o.Limits.MaxConcurrency, sb.Limits())

	api, err := apiConfig(o, sb, cacheURL, imageID, toolchains, keys)
	if err != nil {
		return err
	}
	h, err := httpapi.New(api)
	if err != nil {
		return err
	}
	ml, err := listenMetrics(o.metricsAddr, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		ml.close()
		return fmt.Errorf("setting LISTEN_ADDR: %w", err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ml.serve(h)
	defer ml.close()
	log.Info("serving", "addr", ln.Addr().String(), "metrics_addr", ml.addr(), "version", api.Version, "image_id", api.ImageID,
		"toolchains", api.Toolchains, "cgroup_version", sb.CgroupVersion(), "state_dir", stateDir,
		"file_store", storeDir, "file_store_backend", files.Backend(), "max_concurrency", sb.Limits().MaxConcurrency,
		"queue_timeout_ms", sb.Config().QueueTimeout.Milliseconds(), "auth", !o.noAuth,
		"rate_limit_per_minute", o.rateLimit)
	if ready != nil {
		ready(ln.Addr().String())
	}

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ml.failed():
		srv.Close()
		return fmt.Errorf("serve metrics (METRICS_ADDR): %w", ml.err())
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout_ms", o.shutdownTimeout.Milliseconds())
	// The drain and the sandboxes' close get the timeout but a reserve
	// for what comes after them (the stores' close, the process's exit),
	// so that the process is gone within SHUTDOWN_TIMEOUT_MS.
	reserve := min(500*time.Millisecond, o.shutdownTimeout/8)
	sctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout-reserve)
	defer cancel()
	shutDown = true
	err = h.Shutdown(sctx, srv)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	// /metrics answered throughout the drain, as on LISTEN_ADDR.
	if merr := ml.close(); merr != nil && err == nil {
		err = merr
	}
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// stateDirFree reports an error when another instance holds the lock of
// the state dir (STATE_DIR/.lock, which svc.New takes for the life of the
// Sandbox); a state dir that does not exist yet is free.
func stateDirFree(dir string) error {
	f, err := os.Open(filepath.Join(dir, ".lock"))
	if err != nil {
		return nil // none yet, or unreadable: svc.New says what is wrong
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("setting STATE_DIR: %s is in use by another svc instance; give each instance a state dir of its own", dir)
		}
		return nil
	}
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// redisLogger sends go-redis's own messages (dial failures) to the log.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}

// image returns the image identity and toolchains: the settings, else
// detected in the root filesystem.
func (o *options) image() (string, []string, error) {
	imageID, toolchains := o.imageID, o.toolchains
	if imageID == "" || toolchains == nil {
		rootfs := o.RootFS
		if rootfs == "" {
			rootfs = "/"
		}
		id, tc, err := svc.DetectImage(rootfs)
		if err != nil {
			return "", nil, fmt.Errorf("%w (set SVC_IMAGE_ID and SVC_TOOLCHAINS to skip detection)", err)
		}
		if imageID == "" {
			imageID = id
		}
		if toolchains == nil {
			toolchains = tc
		}
	}
	return imageID, toolchains, nil
}

// goBuildCacheDir returns the directory of the prepared Go build cache
// (GO_BUILD_CACHE_DIR), "" for none.
func (o *options) goBuildCacheDir(stateDir string) string {
	switch o.goBuildCache {
	case "":
		return filepath.Join(stateDir, "gocache")
	case "off":
		return ""
	}
	return o.goBuildCache
}

// apiConfig returns the handler's configuration: keys, rate limit, what
// /info reports.
func apiConfig(o *options, sb *svc.Sandbox, cacheURL *url.URL, imageID string, toolchains, keys []string) (httpapi.Config, error) {
	var cache httpapi.Cache
	if o.Cache != nil {
		cache = o.Cache
	}
	return httpapi.Config{
		Sandbox:            sb,
		Keys:               keys,
		NoAuth:             o.noAuth,
		RateLimitPerMinute: o.rateLimit,
		Cache:              cache,
		CacheInfo: httpapi.CacheInfo{
			Namespace: o.cacheNamespace,
			TTLSecs:   int64(o.cacheTTL / time.Second),
			Backend:   cacheURL.Scheme,
			TimeoutMs: o.cacheTimeout.Milliseconds(),
		},
		BodyIdleTimeout: o.bodyIdleTimeout,
		Version:         version(),
		ImageID:         imageID,
		Toolchains:      toolchains,
		Logger:          o.Logger,
	}, nil
}

// logConcurrency says so when MAX_CONCURRENCY was not set (set is 0)
// and its default, max(CPUs, MAX_PARALLEL_TASKS), gave more task slots
// than CPUs: tasks then share CPUs, and their wall times depend on the
// load. A MAX_PARALLEL_TASKS above its default warns; the default's on a
// small machine is an INFO line.
func logConcurrency(log *slog.Logger, set int, lim svc.Limits) {
	cpus := runtime.NumCPU()
	if set != 0 || lim.MaxConcurrency <= cpus {
		return
	}
	level := slog.LevelInfo
	if lim.MaxParallelTasks > svc.DefaultLimits().MaxParallelTasks {
		level = slog.LevelWarn
	}
	log.Log(context.Background(), level, "MAX_CONCURRENCY is not set: its default, max(CPUs, MAX_PARALLEL_TASKS), gives more task slots than CPUs, which tasks share; set MAX_CONCURRENCY to choose",
		"max_concurrency", lim.MaxConcurrency, "max_parallel_tasks", lim.MaxParallelTasks, "cpus", cpus)
}

// newKey returns a random API key: 48 hex characters.
func newKey() string {
	b := make([]byte, 24)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// version is the module version of the binary, or "devel".
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
