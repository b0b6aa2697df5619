package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/svc-sandbox/svc/httpapi"
)

// metricsListener is the listener of METRICS_ADDR: GET /metrics alone,
// without an API key (httpapi.Handler.MetricsHandler), so that a
// Prometheus scrape configuration carries no secret. A nil
// *metricsListener is none (METRICS_ADDR unset), and its methods do
// nothing.
type metricsListener struct {
	ln       net.Listener
	srv      *http.Server
	stopped  chan struct{} // closed once Serve returned serveErr
	serveErr error

	closeOnce sync.Once
	closeErr  error
}

// listenMetrics listens on addr; "" is no listener.
func listenMetrics(addr string, log *slog.Logger) (*metricsListener, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("setting METRICS_ADDR: %w", err)
	}
	return &metricsListener{ln: ln, stopped: make(chan struct{}), srv: &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}}, nil
}

// addr is the address it listens on, "" for none.
func (m *metricsListener) addr() string {
	if m == nil {
		return ""
	}
	return m.ln.Addr().String()
}

// serve starts serving the metrics of h.
func (m *metricsListener) serve(h *httpapi.Handler) {
	if m == nil {
		return
	}
	m.srv.Handler = h.MetricsHandler()
	go func() {
		m.serveErr = m.srv.Serve(m.ln)
		close(m.stopped)
	}()
}

// failed is closed when it stopped serving, with the error of err; never
// for none.
func (m *metricsListener) failed() <-chan struct{} {
	if m == nil {
		return nil
	}
	return m.stopped
}

// err is what stopped it serving, once failed is closed.
func (m *metricsListener) err() error { return m.serveErr }

// close stops it at once (a scrape is short, and Prometheus retries)
// and returns what stopped it; it may be called again.
func (m *metricsListener) close() error {
	if m == nil {
		return nil
	}
	m.closeOnce.Do(func() {
		m.srv.Close()
		m.ln.Close()
		if m.srv.Handler == nil {
			return // never served
		}
		if <-m.stopped; !errors.Is(m.serveErr, http.ErrServerClosed) {
			m.closeErr = fmt.Errorf("metrics listener (METRICS_ADDR): %w", m.serveErr)
		}
	})
	return m.closeErr
}
