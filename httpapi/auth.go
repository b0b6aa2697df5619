package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/svc-sandbox/svc"
)

// authenticator checks API keys. It keeps their SHA-256 digests only and
// compares digests in constant time, against every key, so the time taken
// says nothing about how close a guess was or which key matched.
type authenticator struct {
	noAuth bool
	keys   [][sha256.Size]byte
}

func newAuthenticator(keys []string, noAuth bool) (*authenticator, error) {
	a := &authenticator{noAuth: noAuth}
	for _, k := range keys {
		if k = strings.TrimSpace(k); k != "" {
			a.keys = append(a.keys, sha256.Sum256([]byte(k)))
		}
	}
	if len(a.keys) == 0 && !noAuth {
		return nil, errors.New("httpapi: no API key configured and NoAuth not set")
	}
	return a, nil
}

// anonymous is the rate-limit identity of requests served with NoAuth.
const anonymous = -1

// check returns the index of the key of an Authorization header value
// ("Bearer <key>"), or an unauthorized error saying whether the key was
// missing or invalid.
func (a *authenticator) check(header string) (int, error) {
	if a.noAuth {
		return anonymous, nil
	}
	scheme, key, _ := strings.Cut(strings.TrimSpace(header), " ")
	key = strings.TrimSpace(key)
	if !strings.EqualFold(scheme, "Bearer") || key == "" {
		return 0, &svc.Error{Code: svc.CodeUnauthorized, Msg: "missing API key: send the header Authorization: Bearer <key>"}
	}
	sum := sha256.Sum256([]byte(key))
	match := -1
	for i := range a.keys {
		if subtle.ConstantTimeCompare(sum[:], a.keys[i][:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return 0, &svc.Error{Code: svc.CodeUnauthorized, Msg: "invalid API key"}
	}
	return match, nil
}

// rateLimiter gives each key a token bucket of perMinute requests per
// minute with a burst of perMinute.
//
// Memory stays bounded however many keys there are: a bucket that has
// refilled completely is the same as a new one, so full buckets are
// dropped whenever the map has doubled since the last sweep. The map
// holds at most the keys seen in the last minute or so.
type rateLimiter struct {
	perMinute int

	mu      sync.Mutex // guards buckets and sweepAt
	buckets map[int]*rate.Limiter
	sweepAt int // sweep when len(buckets) reaches this
}

// minSweep is the map size below which full buckets are not swept.
const minSweep = 1024

func newRateLimiter(perMinute int) *rateLimiter {
	return &rateLimiter{perMinute: perMinute, buckets: map[int]*rate.Limiter{}, sweepAt: minSweep}
}

// allow takes a token of key's bucket at now. When there is none it
// returns false and how long until there is.
func (l *rateLimiter) allow(key int, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= l.sweepAt {
			l.sweep(now)
		}
		b = rate.NewLimiter(rate.Limit(float64(l.perMinute)/60), l.perMinute)
		l.buckets[key] = b
	}
	r := b.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, false
	}
	return 0, true
}

// sweep drops the full buckets.
func (l *rateLimiter) sweep(now time.Time) {
	for k, b := range l.buckets {
		if b.TokensAt(now) >= float64(l.perMinute) {
			delete(l.buckets, k)
		}
	}
	l.sweepAt = max(minSweep, 2*len(l.buckets))
}

// size returns the number of buckets held (for tests).
func (l *rateLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}
