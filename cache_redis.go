package svc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// redisCache is the redis:// store, shared by instances on several hosts.
//
// A layer is one string value, "svc:cache:<namespace>:<key>" holding the
// blob, written by SET with an expiry of TTL and read by GETEX, which
// renews the expiry: Redis expires a layer TTL after its last use. Writers of the same key
// replace each other whole. Drop SCANs the namespace's prefix and UNLINKs
// what it finds. A blob is held in memory while it is written or read (at
// most the workspace size); the server's maxmemory policy bounds the
// store.
//
// After a failure (the server unreachable, a timeout) the store is left
// alone for a second, doubling up to 30 s while failures go on: lookups
// are misses meanwhile, without waiting for timeouts.
type redisCache struct {
	c      *redis.Client
	prefix string
	ttl    time.Duration
	now    func() time.Time
	log    *slog.Logger

	mu        sync.Mutex // guards downUntil and backoff
	downUntil time.Time
	backoff   time.Duration
}

const (
	redisBackoffMin = time.Second
	redisBackoffMax = 30 * time.Second
)

func openRedisCache(rawURL, ns string, ttl time.Duration, now func() time.Time, log *slog.Logger) (*redisCache, error) {
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("URL: %w", err)
	}
	opt.Protocol = 2 // plain GET and SET need nothing of RESP3
	opt.DisableIdentity = true
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	// Fail fast: a lookup that fails is a miss, and the back-off below
	// spares the next ones the wait.
	opt.DialTimeout = 2 * time.Second
	opt.DialerRetries = 1
	// A layer may be as large as the workspace.
	opt.ReadTimeout = 15 * time.Second
	opt.WriteTimeout = 15 * time.Second
	opt.MaxRetries = 1
	opt.ContextTimeoutEnabled = true
	r := &redisCache{c: redis.NewClient(opt), prefix: "svc:cache:" + ns + ":", ttl: ttl, now: now, log: log}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := r.c.Ping(ctx).Err(); err != nil {
		log.Warn("step cache: redis does not answer; counting misses until it does", "addr", opt.Addr, "err", err)
		r.failed()
	}
	return r, nil
}

// available reports whether the store may be tried.
func (r *redisCache) available() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.now().Before(r.downUntil)
}

// result records the outcome of a command: a failure to reach the server
// backs the store off; an answer, even an error reply (a full server),
// clears that. A command the caller's ctx ended says nothing either way.
func (r *redisCache) result(ctx context.Context, err error) error {
	var reply redis.Error
	switch {
	case err == nil || errors.As(err, &reply):
		r.mu.Lock()
		r.backoff = 0
		r.mu.Unlock()
	case ctx.Err() != nil:
	default:
		r.failed()
	}
	return err
}

func (r *redisCache) failed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.backoff = min(max(2*r.backoff, redisBackoffMin), redisBackoffMax)
	r.downUntil = r.now().Add(r.backoff)
}

func (r *redisCache) get(ctx context.Context, key string) (cacheBlob, error) {
	if !r.available() {
		return nil, errCacheUnavailable
	}
	b, err := r.c.GetEx(ctx, r.prefix+key, r.ttl).Bytes()
	switch err := r.result(ctx, err); {
	case errors.Is(err, redis.Nil):
		return nil, errCacheMiss
	case err != nil:
		return nil, err
	}
	return bytesBlob{bytes.NewReader(b)}, nil
}

type bytesBlob struct{ *bytes.Reader }

func (bytesBlob) Close() error { return nil }

func (r *redisCache) create(_ context.Context, key string) (cacheSink, error) {
	if !r.available() {
		return nil, errCacheUnavailable
	}
	return &redisSink{r: r, key: r.prefix + key}, nil
}

type redisSink struct {
	r   *redisCache
	key string
	buf bytes.Buffer
}

func (s *redisSink) Write(p []byte) (int, error) { return s.buf.Write(p) }

func (s *redisSink) commit(ctx context.Context, _ int64) error {
	return s.r.result(ctx, s.r.c.Set(ctx, s.key, s.buf.Bytes(), s.r.ttl).Err())
}

func (s *redisSink) abort() { s.buf = bytes.Buffer{} }

func (r *redisCache) remove(ctx context.Context, key string) error {
	return r.result(ctx, r.c.Del(ctx, r.prefix+key).Err())
}

// drop UNLINKs every key of the namespace, SCANning in batches.
func (r *redisCache) drop(ctx context.Context) (int, error) {
	n := 0
	var cursor uint64
	for {
		keys, next, err := r.c.Scan(ctx, cursor, r.prefix+"*", 1000).Result()
		if err != nil {
			return n, r.result(ctx, err)
		}
		if len(keys) > 0 {
			c, err := r.c.Unlink(ctx, keys...).Result()
			if err != nil {
				return n, r.result(ctx, err)
			}
			n += int(c)
		}
		if cursor = next; cursor == 0 {
			return n, r.result(ctx, nil)
		}
	}
}

func (r *redisCache) close() error { return r.c.Close() }
