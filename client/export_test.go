package client

import (
	"context"
	"time"
)

// SetSleep replaces how c waits between attempts: tests record the waits
// instead of sleeping through them.
func SetSleep(c *Client, f func(ctx context.Context, d time.Duration) error) { c.sleep = f }

// ParseRetryAfter is parseRetryAfter.
var ParseRetryAfter = parseRetryAfter
