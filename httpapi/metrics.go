package httpapi

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
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
//	svc_cache_store_down                     1 while the cache's store is left alone after a failure
//	svc_filestore_files, svc_filestore_bytes what the file store holds
//	svc_uploads_in_flight                    POST /file being served
//	svc_rate_limited_total                   requests answered rate_limited
//	svc_workspaces_total{source}             workspaces taken prepared ahead or built on the request's path
//	svc_go_build_cache_state{state}          1 for the Go build cache's state, 0 for the others
//
// The histograms are Prometheus histograms (cumulative _bucket{le=...}
// series, _sum, _count) with fixed buckets, the same on every instance,
// so that Prometheus can add them up across instances and take
// quantiles (histogram_quantile). docs/configuration.md lists the buckets;
// deploy/grafana-dashboard.json and deploy/prometheus-alerts.yaml read
// these names, and a test holds them to what /metrics serves.
//
// Each svc_ family carries a HELP and a TYPE line, from metricHelp;
// after them come the Go runtime's go_* and the process's process_*
// metrics (CPU, memory, open and maximum fds, start time), as the
// library writes them.
type metricSet struct {
	set          *metrics.Set
	rateLimited  *metrics.Counter
	taskDuration *metrics.PrometheusHistogram
	queueWait    *metrics.PrometheusHistogram
}

// Bucket upper bounds, in seconds: 1-2.5-5 per decade from 1 ms to 10 s,
// then coarser. A bound above the last is counted in le="+Inf" only.
var (
	// taskBuckets: a task's wall time. 15 s holds the tasks killed at
	// the default WALL_TIMEOUT_MS of 10 s (a little over 10 s), 60 s is
	// the default OVERALL_TIMEOUT_MS, past which no task runs.
	taskBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15, 30, 60}
	// queueBuckets: the wait for task slots, at most QUEUE_TIMEOUT_MS;
	// without a queue timeout every wait is below the first bound.
	queueBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15, 30, 60}
	// requestBuckets: the time to answer, from /health (well under 1 ms)
	// to an /execute that waited for slots and then ran up to the
	// default OVERALL_TIMEOUT_MS of 60 s (90 s holds those killed at it).
	requestBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15, 30, 60, 90, 120}
)

func newMetrics(h *Handler) *metricSet {
	// HELP and TYPE lines: the library's switch is process-wide, and
	// off by default; write replaces its empty HELP texts with ours.
	metrics.ExposeMetadata(true)
	s := metrics.NewSet()
	m := &metricSet{set: s}
	lim := h.sb.Limits()
	s.NewGauge("svc_execution_slots", func() float64 { return float64(lim.MaxConcurrency) })
	s.NewGauge("svc_execution_slots_in_use", func() float64 { return float64(h.sb.SlotsInUse()) })
	s.NewGauge("svc_execution_queue_length", func() float64 { return float64(h.sb.QueueLength()) })
	s.NewGauge("svc_http_requests_in_flight", func() float64 { return float64(h.active.count()) })
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
	s.NewGauge("svc_cache_store_down", cache(func(c svc.CacheStats) uint64 {
		if c.StoreDown {
			return 1
		}
		return 0
	}))
	s.NewGauge("svc_filestore_files", func() float64 { n, _ := h.files.Usage(); return float64(n) })
	s.NewGauge("svc_filestore_bytes", func() float64 { _, b := h.files.Usage(); return float64(b) })
	s.NewGauge("svc_uploads_in_flight", func() float64 { return float64(h.uploads.Load()) })
	s.NewGauge(`svc_workspaces_total{source="prepared"}`, func() float64 { return float64(h.sb.WorkspaceStats().Prepared) })
	s.NewGauge(`svc_workspaces_total{source="built"}`, func() float64 { return float64(h.sb.WorkspaceStats().Built) })
	for _, st := range svc.GoBuildCacheStates() {
		s.NewGauge(fmt.Sprintf(`svc_go_build_cache_state{state=%q}`, st), func() float64 {
			if h.sb.GoBuildCacheState() == st {
				return 1
			}
			return 0
		})
	}
	// Every error code and every task outcome is counted from 0, so that
	// Prometheus's rate() and increase() see the first one: a series that
	// appears at 1 shows no increase.
	for _, c := range svc.Codes() {
		status, _ := Status(c)
		s.GetOrCreateCounter(responsesName(status, c))
	}
	for _, o := range svc.Outcomes() {
		s.GetOrCreateCounter(tasksName(o))
	}
	m.rateLimited = s.NewCounter("svc_rate_limited_total")
	m.taskDuration = s.NewPrometheusHistogramExt("svc_task_duration_seconds", taskBuckets)
	m.queueWait = s.NewPrometheusHistogramExt("svc_execution_queue_wait_seconds", queueBuckets)
	return m
}

// metricHelp is the TYPE and HELP of each svc_ metric family, as
// docs/configuration.md lists them. A family missing here is served with
// the library's type and an empty HELP, which a test refuses.
var metricHelp = map[string]struct{ typ, help string }{
	"svc_execution_slots":               {"gauge", "Task slots of the instance (MAX_CONCURRENCY)."},
	"svc_execution_slots_in_use":        {"gauge", "Task slots held by running requests."},
	"svc_execution_queue_length":        {"gauge", "Requests waiting for task slots (QUEUE_TIMEOUT_MS)."},
	"svc_execution_queue_wait_seconds":  {"histogram", "How long each answered POST /execute waited for its task slots."},
	"svc_http_requests_in_flight":       {"gauge", "HTTP requests being served."},
	"svc_http_responses_total":          {"counter", "HTTP responses by status and error code (code empty for success)."},
	"svc_http_request_duration_seconds": {"histogram", "Time to answer, by canonical path (other: unknown paths)."},
	"svc_tasks_total":                   {"counter", "Task results by outcome, replayed ones included."},
	"svc_task_duration_seconds":         {"histogram", "Wall time of the tasks that ran here (not replayed, not not-run)."},
	"svc_cache_hits_total":              {"counter", "Steps replayed from the step cache."},
	"svc_cache_misses_total":            {"counter", "Cacheable steps executed because no usable layer was found."},
	"svc_cache_stores_total":            {"counter", "Step cache layers written."},
	"svc_cache_errors_total":            {"counter", "Failures of the step cache's store or of its layers; requests go on."},
	"svc_cache_store_down":              {"gauge", "1 while the step cache's store is left alone after a failure, else 0."},
	"svc_filestore_files":               {"gauge", "Files the file store holds."},
	"svc_filestore_bytes":               {"gauge", "Bytes the file store holds."},
	"svc_uploads_in_flight":             {"gauge", "POST /file being served."},
	"svc_rate_limited_total":            {"counter", "Requests answered rate_limited."},
	"svc_workspaces_total":              {"counter", "Workspaces requests took: prepared ahead, or built on the request's path."},
	"svc_go_build_cache_state":          {"gauge", "1 for the state the Go build cache is in (off, preparing, ready, failed), 0 for the others."},
}

// write writes the metrics in the Prometheus text format: the set's, with
// the HELP and TYPE of metricHelp, then the Go runtime's and the
// process's.
func (m *metricSet) write(w io.Writer) {
	var b bytes.Buffer
	m.set.WritePrometheus(&b)
	bw := bufio.NewWriter(w)
	for line := range strings.Lines(b.String()) {
		for _, kind := range []string{"# HELP ", "# TYPE "} {
			rest, ok := strings.CutPrefix(line, kind)
			if !ok {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
			if d, ok := metricHelp[name]; ok {
				text := d.help
				if kind == "# TYPE " {
					text = d.typ
				}
				line = kind + name + " " + text + "\n"
			}
		}
		bw.WriteString(line)
	}
	metrics.WriteProcessMetrics(bw)
	metrics.WriteFDMetrics(bw)
	bw.Flush()
}

// response counts a response and its duration.
func (m *metricSet) response(status int, code svc.Code, path string, d time.Duration) {
	m.set.GetOrCreateCounter(responsesName(status, code)).Inc()
	m.set.GetOrCreatePrometheusHistogramExt(fmt.Sprintf(`svc_http_request_duration_seconds{path=%q}`, path), requestBuckets).Update(d.Seconds())
}

// executed counts a response of /execute: its wait for slots and its
// task results.
func (m *metricSet) executed(resp *svc.Response) {
	m.queueWait.Update(resp.QueueWait.Seconds())
	for _, sr := range resp.Results {
		for _, r := range sr.Results {
			m.set.GetOrCreateCounter(tasksName(r.Outcome)).Inc()
			if r.Outcome.Ran() && !r.Replayed {
				m.taskDuration.Update(float64(r.Stats.WallTimeMs) / 1000)
			}
		}
	}
}

// responsesName is the counter of the responses with status and code.
func responsesName(status int, code svc.Code) string {
	return fmt.Sprintf(`svc_http_responses_total{status="%d",code=%q}`, status, code)
}

// tasksName is the counter of the task results with outcome o.
func tasksName(o svc.Outcome) string {
	return fmt.Sprintf(`svc_tasks_total{outcome=%q}`, o)
}
