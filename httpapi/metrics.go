package httpapi

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/svc-sandbox/svc"
)

// metricSet holds the metrics of one Handler in a private metrics.Set, so
// several Handlers can live in one process. Every name starts with svc_.
//
//	svc_execution_slots                      task slots of the instance
//	svc_execution_slots_in_use               task slots held by requests
//	svc_execution_queue_length               requests waiting for task slots
//	svc_execution_queue_wait_seconds         how long each answered execute waited for its slots
//	svc_http_requests_in_flight              requests being served
//	svc_http_responses_total{status,code}    responses; code "" for success
//	svc_http_request_duration_seconds{path}  by canonical path ("other": unknown)
//	svc_tasks_total{outcome}                 task results, replayed ones included
//	svc_task_duration_seconds                wall time of tasks that ran here
//	svc_cache_{hits,misses,stores,errors}_total  the step cache's counters
//	svc_filestore_files, svc_filestore_bytes what the file store holds
//	svc_uploads_in_flight                    POST /file being served
//	svc_rate_limited_total                   requests answered rate_limited
type metricSet struct {
	set          *metrics.Set
	inFlight     atomic.Int64
	rateLimited  *metrics.Counter
	taskDuration *metrics.Histogram
	queueWait    *metrics.Histogram
}

func newMetrics(h *Handler) *metricSet {
	s := metrics.NewSet()
	m := &metricSet{set: s}
	lim := h.sb.Limits()
	s.NewGauge("svc_execution_slots", func() float64 { return float64(lim.MaxConcurrency) })
	s.NewGauge("svc_execution_slots_in_use", func() float64 { return float64(h.sb.SlotsInUse()) })
	s.NewGauge("svc_execution_queue_length", func() float64 { return float64(h.sb.QueueLength()) })
	s.NewGauge("svc_http_requests_in_flight", func() float64 { return float64(m.inFlight.Load()) })
	cache := func(f func(svc.CacheStats) uint64) func() float64 {
		return func() float64 {
			if h.cache == nil {
				return 0
			}
			return float64(f(h.cache.Stats()))
		}
	}
	s.NewGauge("svc_cache_hits_total", cache(func(c svc.CacheStats) uint64 { return c.Hits }))
	s.NewGauge("svc_cache_misses_total", cache(func(c svc.CacheStats) uint64 { return c.Misses }))
	s.NewGauge("svc_cache_stores_total", cache(func(c svc.CacheStats) uint64 { return c.Stores }))
	s.NewGauge("svc_cache_errors_total", cache(func(c svc.CacheStats) uint64 { return c.Errors }))
	s.NewGauge("svc_filestore_files", func() float64 { n, _ := h.files.Usage(); return float64(n) })
	s.NewGauge("svc_filestore_bytes", func() float64 { _, b := h.files.Usage(); return float64(b) })
	s.NewGauge("svc_uploads_in_flight", func() float64 { return float64(h.uploads.Load()) })
	m.rateLimited = s.NewCounter("svc_rate_limited_total")
	m.taskDuration = s.NewHistogram("svc_task_duration_seconds")
	m.queueWait = s.NewHistogram("svc_execution_queue_wait_seconds")
	return m
}

// response counts a response and its duration.
func (m *metricSet) response(status int, code svc.Code, path string, d time.Duration) {
	m.set.GetOrCreateCounter(fmt.Sprintf(`svc_http_responses_total{status="%d",code=%q}`, status, code)).Inc()
	m.set.GetOrCreateHistogram(fmt.Sprintf(`svc_http_request_duration_seconds{path=%q}`, path)).Update(d.Seconds())
}

// executed counts a response of /execute: its wait for slots and its
// task results.
func (m *metricSet) executed(resp *svc.Response) {
	m.queueWait.Update(resp.QueueWait.Seconds())
	for _, sr := range resp.Results {
		for _, r := range sr.Results {
			m.set.GetOrCreateCounter(fmt.Sprintf(`svc_tasks_total{outcome=%q}`, r.Outcome)).Inc()
			if r.Outcome.Ran() && !r.Replayed {
				m.taskDuration.Update(float64(r.Stats.WallTimeMs) / 1000)
			}
		}
	}
}
