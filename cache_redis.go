package svc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
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
// Each command runs under the deadline of its caller's context (the
// cache's Timeout, set by StepCache for every call); after a failure the
// StepCache's breaker leaves the store alone for a while. An error reply
// (a full server) is errStoreReply: the server answers.
type redisCache struct {
	c      *redis.Client
	prefix string
	ttl    time.Duration
	log    *slog.Logger
}

func openRedisCache(rawURL, ns string, ttl, timeout time.Duration, log *slog.Logger) (*redisCache, error) {
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("URL: %w", err)
	}
	opt.Protocol = 2 // plain GET and SET need nothing of RESP3
	opt.DisableIdentity = true
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	// Fail fast: a lookup that fails is a miss, and the StepCache's
	// breaker spares the next ones the wait. Every command's deadline is
	// its context's (ContextTimeoutEnabled), the cache's Timeout: these
	// are only the bounds of a call without one.
	opt.DialTimeout = timeout
	opt.DialerRetries = 1
	opt.ReadTimeout = timeout
	opt.WriteTimeout = timeout
	opt.PoolTimeout = timeout
	opt.MaxRetries = 0 // a retry would only spend the same deadline
	opt.ContextTimeoutEnabled = true
	r := &redisCache{c: redis.NewClient(opt), prefix: "svc:cache:" + ns + ":", ttl: ttl, log: log}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := r.c.Ping(ctx).Err(); err != nil {
		log.Warn("step cache: redis does not answer; requests run uncached until it does", "addr", opt.Addr, "err", err)
	}
	return r, nil
}

// redisResult marks an error reply (the server answered; redis.Nil is not
// one) as errStoreReply.
func redisResult(err error) error {
	var reply redis.Error
	if err != nil && !errors.Is(err, redis.Nil) && errors.As(err, &reply) {
		return errStoreReply{err}
	}
	return err
}

func (r *redisCache) get(ctx context.Context, key string) (cacheBlob, error) {
	b, err := r.c.GetEx(ctx, r.prefix+key, r.ttl).Bytes()
	switch err := redisResult(err); {
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
	return &redisSink{r: r, key: r.prefix + key}, nil
}

type redisSink struct {
	r   *redisCache
	key string
	buf bytes.Buffer
}

func (s *redisSink) Write(p []byte) (int, error) { return s.buf.Write(p) }

func (s *redisSink) commit(ctx context.Context, _ int64) error {
	return redisResult(s.r.c.Set(ctx, s.key, s.buf.Bytes(), s.r.ttl).Err())
}

func (s *redisSink) abort() { s.buf = bytes.Buffer{} }

func (r *redisCache) remove(ctx context.Context, key string) error {
	return redisResult(r.c.Del(ctx, r.prefix+key).Err())
}

// drop UNLINKs every key of the namespace, SCANning in batches.
func (r *redisCache) drop(ctx context.Context) (int, error) {
	n := 0
	var cursor uint64
	for {
		keys, next, err := r.c.Scan(ctx, cursor, r.prefix+"*", 1000).Result()
		if err != nil {
			return n, redisResult(err)
		}
		if len(keys) > 0 {
			c, err := r.c.Unlink(ctx, keys...).Result()
			if err != nil {
				return n, redisResult(err)
			}
			n += int(c)
		}
		if cursor = next; cursor == 0 {
			return n, nil
		}
	}
}

func (r *redisCache) close() error { return r.c.Close() }
