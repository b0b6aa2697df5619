package httpapi_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/svc-sandbox/svc/svctest"
)

// The operator's kit in deploy/: a Grafana dashboard and Prometheus
// alerting rules over the metrics of GET /metrics. These tests hold every
// query in them to the metrics a real server serves, label values
// included, and hand the rules to promtool when it is installed (Debian
// package prometheus; CI installs it).

const (
	dashboardFile  = "../deploy/grafana-dashboard.json"
	alertsFile     = "../deploy/prometheus-alerts.yaml"
	alertTestsFile = "../deploy/prometheus-alerts.test.yaml"
)

// served is what /metrics serves: metric name -> label -> values.
type served map[string]map[string]map[string]bool

// servedMetrics starts a server, runs a request and an upload through it,
// and parses its /metrics: every metric appears, histograms with their
// _bucket (le), _sum and _count series.
func servedMetrics(t *testing.T) served {
	t.Helper()
	s := newServer(t, svctest.Config{})
	decode(t, execute(s, `{"steps": [{"cmd": "true"}]}`), 200, new(executeResponse))
	decode(t, upload(t, s, "/file", "m", "", []byte("metrics")), 201, new(uploaded))
	text := string(body(t, s.Do("GET", "/metrics", "")))
	m := served{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		end := strings.IndexAny(line, "{ ")
		if end <= 0 {
			t.Fatalf("/metrics line %q", line)
		}
		name := line[:end]
		if m[name] == nil {
			m[name] = map[string]map[string]bool{}
		}
		if line[end] == '{' {
			ms, n, err := parseMatchers(line[end:])
			if err != nil {
				t.Fatalf("/metrics line %q: %v", line, err)
			}
			end += n
			for _, mt := range ms {
				if m[name][mt.label] == nil {
					m[name][mt.label] = map[string]bool{}
				}
				m[name][mt.label][mt.value] = true
			}
		}
		if _, err := strconv.ParseFloat(strings.TrimSpace(line[end:]), 64); err != nil {
			t.Fatalf("/metrics line %q: value: %v", line, err)
		}
	}
	for _, h := range []string{"svc_task_duration_seconds", "svc_execution_queue_wait_seconds", "svc_http_request_duration_seconds"} {
		if !m[h+"_bucket"]["le"]["+Inf"] || m[h+"_sum"] == nil || m[h+"_count"] == nil {
			t.Fatalf("%s is not served as a Prometheus histogram (_bucket{le}, _sum, _count):\n%s", h, text)
		}
	}
	return m
}

// family is the name of the metric that series name belongs to: a
// histogram's series share their base name.
func (m served) family(name string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && m[base+"_bucket"]["le"] != nil {
			return base
		}
	}
	return name
}

// check reports every selector of expr that names a metric m does not
// serve, or a label or label value its series never carry. job and
// instance are Prometheus's own labels, set at scrape time, and up its
// own metric of each scrape (1 when it succeeded).
func (m served) check(expr string) error {
	sels, err := parsePromQL(expr)
	if err != nil {
		return err
	}
	if len(sels) == 0 {
		return fmt.Errorf("names no metric")
	}
	for _, sel := range sels {
		if sel.name == "up" {
			for _, mt := range sel.matchers {
				if mt.label != "job" && mt.label != "instance" {
					return fmt.Errorf("up{%s}: up has only the labels job and instance", mt.label)
				}
			}
			continue
		}
		labels, ok := m[sel.name]
		if !ok {
			return fmt.Errorf("%s: /metrics has no such metric", sel.name)
		}
		for _, mt := range sel.matchers {
			if mt.label == "job" || mt.label == "instance" {
				continue
			}
			values, ok := labels[mt.label]
			if !ok {
				return fmt.Errorf("%s: /metrics has no label %s on it", sel.name, mt.label)
			}
			var want []string
			switch {
			case mt.op == "=":
				want = []string{mt.value}
			case mt.op == "=~" && regexp.MustCompile(`^[a-z0-9_/]+(\|[a-z0-9_/]+)*$`).MatchString(mt.value):
				want = strings.Split(mt.value, "|")
			}
			for _, v := range want {
				if !values[v] {
					return fmt.Errorf("%s{%s=%q}: /metrics has no such series", sel.name, mt.label, v)
				}
			}
		}
	}
	return nil
}

// TestGrafanaDashboard: deploy/grafana-dashboard.json is a Grafana
// dashboard whose every query names only metrics /metrics serves, and
// which shows every one of them.
func TestGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	type target struct {
		RefID      string            `json:"refId"`
		Expr       string            `json:"expr"`
		Datasource map[string]string `json:"datasource"`
	}
	type panel struct {
		ID         int               `json:"id"`
		Type       string            `json:"type"`
		Title      string            `json:"title"`
		Datasource map[string]string `json:"datasource"`
		GridPos    struct{ H, W, X, Y int }
		Targets    []target `json:"targets"`
		Panels     []panel  `json:"panels"`
	}
	var d struct {
		UID           string  `json:"uid"`
		Title         string  `json:"title"`
		SchemaVersion int     `json:"schemaVersion"`
		Panels        []panel `json:"panels"`
		Templating    struct {
			List []struct {
				Name       string            `json:"name"`
				Type       string            `json:"type"`
				Datasource map[string]string `json:"datasource"`
				Definition string            `json:"definition"`
				Query      json.RawMessage   `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 39 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want both, and a current Grafana's schema (39 or later)", d.UID, d.Title, d.SchemaVersion)
	}
	m := servedMetrics(t)

	// Every query, with where it is, and Prometheus's form of it for
	// promtool: Grafana's variables replaced.
	type query struct{ where, expr string }
	var queries []query
	const ds = "${datasource}"
	hasDS := false
	for _, v := range d.Templating.List {
		switch v.Type {
		case "datasource":
			hasDS = v.Name == "datasource" && string(v.Query) == `"prometheus"`
		case "query":
			if v.Datasource["uid"] != ds {
				t.Errorf("variable %s: datasource %v, want uid %s", v.Name, v.Datasource, ds)
			}
			// label_values(<selector>, <label>) is Grafana's, not PromQL.
			lv := regexp.MustCompile(`^label_values\((.+), *[a-z_]+\)$`).FindStringSubmatch(v.Definition)
			if lv == nil {
				t.Errorf("variable %s: query %q is not label_values(<selector>, <label>)", v.Name, v.Definition)
				continue
			}
			var q struct{ Query string }
			if err := json.Unmarshal(v.Query, &q); err != nil || q.Query != v.Definition {
				t.Errorf("variable %s: query %s differs from its definition %q", v.Name, v.Query, v.Definition)
			}
			queries = append(queries, query{"variable " + v.Name, lv[1]})
		}
	}
	if !hasDS {
		t.Errorf("no variable datasource of type datasource for prometheus: the panels' %s", ds)
	}
	ids := map[int]bool{}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
			if ids[p.ID] {
				t.Errorf("%s: id used twice", where)
			}
			ids[p.ID] = true
			if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
				t.Errorf("%s: gridPos %+v", where, p.GridPos)
			}
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource["uid"] != ds || len(p.Targets) == 0 {
				t.Errorf("%s: datasource %v, %d queries: want uid %s and queries", where, p.Datasource, len(p.Targets), ds)
			}
			for _, tg := range p.Targets {
				if tg.Datasource["uid"] != ds {
					t.Errorf("%s %s: datasource %v", where, tg.RefID, tg.Datasource)
				}
				queries = append(queries, query{where + " " + tg.RefID, tg.Expr})
			}
		}
	}
	walk(d.Panels)

	shown := map[string]bool{}
	var rules []string
	for i, q := range queries {
		if err := m.check(q.expr); err != nil {
			t.Errorf("%s: %s: %v", q.where, q.expr, err)
			continue
		}
		sels, _ := parsePromQL(q.expr)
		for _, sel := range sels {
			shown[m.family(sel.name)] = true
		}
		prom := strings.NewReplacer("$__rate_interval", "5m", "$job", ".*", "$instance", ".*").Replace(q.expr)
		rules = append(rules, fmt.Sprintf("      - record: dashboard:query_%d\n        expr: %s\n", i, strconv.Quote(prom)))
	}
	for name := range m {
		// svc's own; Go's and the process's are for other dashboards.
		if f := m.family(name); strings.HasPrefix(f, "svc_") && !shown[f] {
			t.Errorf("the dashboard does not show %s", f)
			shown[f] = true
		}
	}
	t.Logf("%d queries over %d metrics", len(queries), len(shown))

	// promtool parses the queries as recording rules.
	promtool(t, func(bin string) {
		f := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
		text := "groups:\n  - name: dashboard\n    rules:\n" + strings.Join(rules, "")
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, bin, "check", "rules", f)
	})
}

// TestPrometheusAlerts: deploy/prometheus-alerts.yaml is a complete set
// of alerting rules over metrics /metrics serves, which promtool accepts
// and whose unit tests (deploy/prometheus-alerts.test.yaml) pass and
// cover every alert.
func TestPrometheusAlerts(t *testing.T) {
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	m := servedMetrics(t)
	alerts := map[string]bool{}
	for _, g := range doc.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q: a name and rules wanted", g.Name)
		}
		for _, r := range g.Rules {
			if r.Alert == "" || alerts[r.Alert] {
				t.Errorf("rule %q: a unique alert name wanted", r.Alert)
			}
			alerts[r.Alert] = true
			if err := m.check(r.Expr); err != nil {
				t.Errorf("%s: %s: %v", r.Alert, r.Expr, err)
			}
			if d, err := time.ParseDuration(r.For); err != nil || d <= 0 {
				t.Errorf("%s: for %q, want a duration", r.Alert, r.For)
			}
			if s := r.Labels["severity"]; !slices.Contains([]string{"critical", "warning", "info"}, s) {
				t.Errorf("%s: severity %q", r.Alert, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: annotations summary and description wanted, have %v", r.Alert, r.Annotations)
			}
		}
	}
	for _, want := range []string{"SvcInstanceDown", "SvcCapacityExhausted", "SvcSandboxSetupFailed", "SvcCacheErrors"} {
		if !alerts[want] {
			t.Errorf("no alert %s", want)
		}
	}
	t.Logf("%d alerts over metrics /metrics serves", len(alerts))

	// Every alert has a unit test that makes it fire.
	raw, err = os.ReadFile(alertTestsFile)
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		RuleFiles []string `yaml:"rule_files"`
		Tests     []struct {
			AlertRuleTest []struct {
				AlertName string           `yaml:"alertname"`
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(raw, &tests); err != nil {
		t.Fatalf("%s: %v", alertTestsFile, err)
	}
	if !slices.Equal(tests.RuleFiles, []string{filepath.Base(alertsFile)}) {
		t.Errorf("%s: rule_files %v", alertTestsFile, tests.RuleFiles)
	}
	fired := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, at := range tc.AlertRuleTest {
			if len(at.ExpAlerts) > 0 {
				fired[at.AlertName] = true
			}
		}
	}
	for a := range alerts {
		if !fired[a] {
			t.Errorf("%s: no test in %s makes it fire", a, alertTestsFile)
		}
	}

	promtool(t, func(bin string) {
		run(t, bin, "check", "rules", alertsFile)
		run(t, bin, "test", "rules", alertTestsFile)
	})
}

// promtool calls f with the path of promtool, if it is installed. Without
// it, the rules were checked above as YAML and by this file's own reading
// of their queries, not by Prometheus's parser: the test says so, and in
// CI it fails.
func promtool(t *testing.T, f func(bin string)) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		msg := "promtool is not installed (Debian package prometheus): the queries were checked against /metrics, not by Prometheus's parser"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + "; .ci/run installs it")
		}
		t.Log(msg)
		return
	}
	f(bin)
}

// run runs promtool with args and fails the test with its output unless
// it succeeds.
func run(t *testing.T, bin string, args ...string) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		return
	}
	t.Logf("promtool %s:\n%s", strings.Join(args, " "), bytes.TrimSpace(out))
}

// A selector is a metric name and its label matchers.
type selector struct {
	name     string
	matchers []matcher
}

type matcher struct{ label, op, value string }

// PromQL's functions and aggregations, and its keywords: any other name
// in an expression is a metric's. A name called as a function must be
// one of these.
var (
	promFuncs = wordSet(`abs absent absent_over_time avg_over_time ceil changes clamp clamp_max
		clamp_min count_over_time day_of_month day_of_week day_of_year days_in_month delta deriv
		exp floor histogram_quantile hour idelta increase irate label_join label_replace
		last_over_time ln log10 log2 max_over_time min_over_time minute month predict_linear
		present_over_time quantile_over_time rate resets round scalar sgn sort sort_desc sqrt
		stddev_over_time stdvar_over_time sum_over_time time timestamp vector year
		sum min max avg group stddev stdvar count count_values bottomk topk quantile`)
	promGrouping = wordSet(`by without on ignoring group_left group_right`)
	promKeywords = wordSet(`and or unless bool offset atan2 inf nan`)
)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// parsePromQL returns the selectors of a PromQL expression. It reads
// only as much PromQL as it needs: names, strings, label matchers,
// ranges, groupings; promtool checks the rest.
func parsePromQL(expr string) ([]selector, error) {
	var sels []selector
	isName := func(c byte, first bool) bool {
		return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
	}
	next := func(i int) byte {
		for ; i < len(expr); i++ {
			if expr[i] != ' ' && expr[i] != '\n' && expr[i] != '\t' {
				return expr[i]
			}
		}
		return 0
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			_, n, err := readString(expr[i:])
			if err != nil {
				return nil, err
			}
			i += n
		case c == '[':
			end := strings.IndexByte(expr[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("unclosed [ at %d", i)
			}
			i += end + 1
		case c == '{':
			return nil, fmt.Errorf("a selector without a metric name at %d", i)
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (isName(expr[i], false) || expr[i] == '.') {
				i++
			}
		case isName(c, true):
			start := i
			for i < len(expr) && isName(expr[i], false) {
				i++
			}
			word := expr[start:i]
			switch lower := strings.ToLower(word); {
			case promGrouping[word]:
				if next(i) == '(' {
					end := strings.IndexByte(expr[i:], ')')
					if end < 0 {
						return nil, fmt.Errorf("unclosed %s( at %d", word, start)
					}
					i += end + 1
				}
			case promKeywords[lower]:
			case promFuncs[word]:
			case next(i) == '(':
				return nil, fmt.Errorf("%s: not a PromQL function", word)
			default:
				sel := selector{name: word}
				for i < len(expr) && expr[i] == ' ' {
					i++
				}
				if i < len(expr) && expr[i] == '{' {
					ms, n, err := parseMatchers(expr[i:])
					if err != nil {
						return nil, fmt.Errorf("%s: %v", word, err)
					}
					sel.matchers = ms
					i += n
				}
				sels = append(sels, sel)
			}
		default:
			i++
		}
	}
	return sels, nil
}

// parseMatchers reads `{label op "value", ...}` at the start of s and
// returns the matchers and the length read.
func parseMatchers(s string) ([]matcher, int, error) {
	var ms []matcher
	i := 1
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == ',') {
			i++
		}
	}
	for {
		skip()
		if i >= len(s) {
			return nil, 0, fmt.Errorf("unclosed {")
		}
		if s[i] == '}' {
			return ms, i + 1, nil
		}
		start := i
		for i < len(s) && (s[i] == '_' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9') {
			i++
		}
		label := s[start:i]
		for i < len(s) && s[i] == ' ' {
			i++
		}
		var op string
		for _, o := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(s[i:], o) {
				op = o
				break
			}
		}
		if label == "" || op == "" {
			return nil, 0, fmt.Errorf("matcher at %q", s[start:])
		}
		i += len(op)
		for i < len(s) && s[i] == ' ' {
			i++
		}
		value, n, err := readString(s[i:])
		if err != nil {
			return nil, 0, fmt.Errorf("label %s: %v", label, err)
		}
		i += n
		ms = append(ms, matcher{label, op, value})
	}
}

// readString reads the quoted string (in double, single or back quotes)
// at the start of s.
func readString(s string) (string, int, error) {
	if s == "" {
		return "", 0, fmt.Errorf("a string wanted")
	}
	q := s[0]
	if q != '"' && q != '\'' && q != '`' {
		return "", 0, fmt.Errorf("a string wanted at %q", s)
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if q != '`' {
				i++
			}
		case q:
			lit := s[:i+1]
			if q == '\'' {
				lit = `"` + strings.ReplaceAll(lit[1:i], `"`, `\"`) + `"`
			}
			v, err := strconv.Unquote(lit)
			return v, i + 1, err
		}
	}
	return "", 0, fmt.Errorf("unclosed string %q", s)
}

// TestMetricsExposition: GET /metrics of a real server is what a
// Prometheus server scrapes without complaint. promtool check metrics
// (Prometheus's own text-format parser and its linter) reads the scrape
// on stdin; every svc_ family has a HELP text and the TYPE that
// docs/configuration.md gives it; the Go runtime's go_* and the
// process's process_* metrics are there.
func TestMetricsExposition(t *testing.T) {
	s := newServer(t, svctest.Config{})
	decode(t, execute(s, `{"steps": [{"cmd": "true"}]}`), 200, new(executeResponse))
	text := body(t, s.Do("GET", "/metrics", ""))
	checkExposition(t, text)
}

// checkExposition checks a scrape of /metrics: see TestMetricsExposition.
func checkExposition(t *testing.T, text []byte) {
	t.Helper()
	docTypes := documentedMetrics(t)

	// The families in the order served, with their HELP and TYPE.
	type family struct{ help, typ string }
	fams := map[string]*family{}
	var current string
	for line := range strings.Lines(string(text)) {
		line = strings.TrimSuffix(line, "\n")
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, help, _ := strings.Cut(rest, " ")
			current = name
			fams[name] = &family{help: strings.TrimSpace(help)}
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			if name != current {
				t.Errorf("# TYPE %s follows the HELP of %s", name, current)
				continue
			}
			fams[name].typ = typ
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		if !strings.HasPrefix(name, current) {
			t.Errorf("%s is served without a HELP and TYPE of its own (under %q)", name, current)
		}
		if _, ok := fams[name]; !ok && strings.HasPrefix(name, "svc_") && !strings.HasPrefix(name, current+"_") {
			t.Errorf("%s: no HELP line", name)
		}
	}
	var svcFams []string
	for name, f := range fams {
		if !strings.HasPrefix(name, "svc_") {
			continue
		}
		svcFams = append(svcFams, name)
		if f.help == "" {
			t.Errorf("%s: empty HELP (metricHelp in httpapi/metrics.go has none for it)", name)
		}
		switch want, ok := docTypes[name]; {
		case !ok:
			t.Errorf("%s (%s) is not in the metrics table of docs/configuration.md", name, f.typ)
		case f.typ != want:
			t.Errorf("%s: served with TYPE %s, docs/configuration.md says %s", name, f.typ, want)
		}
	}
	for name := range docTypes {
		if fams[name] == nil {
			t.Errorf("docs/configuration.md lists %s, which /metrics does not serve", name)
		}
	}
	for _, want := range []string{"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
		"process_start_time_seconds", "go_goroutines", "go_memstats_alloc_bytes", "go_info"} {
		if fams[want] == nil || fams[want].typ == "" {
			t.Errorf("/metrics has no %s with its TYPE", want)
		}
	}
	slices.Sort(svcFams)
	t.Logf("%d families, %d of them svc_: %s", len(fams), len(svcFams), strings.Join(svcFams, " "))

	promtool(t, func(bin string) {
		cmd := exec.Command(bin, "check", "metrics")
		cmd.Stdin = bytes.NewReader(text)
		out, err := cmd.CombinedOutput()
		// promtool exits 1 when the text does not parse, 3 when it parses
		// but its linter has remarks. The linter wants a HELP text for
		// every family, which the library's go_* and process_* lack:
		// remarks on those are logged; on svc_ families they fail.
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 3) {
			t.Fatalf("promtool check metrics: %v\n%s", err, out)
		}
		var others int
		for line := range strings.Lines(string(out)) {
			if strings.HasPrefix(line, "svc_") {
				t.Errorf("promtool check metrics: %s", strings.TrimSpace(line))
			} else if strings.TrimSpace(line) != "" {
				others++
			}
		}
		t.Logf("promtool check metrics: the scrape parses; no remark on svc_ families, %d on the library's go_* and process_*", others)
	})
}

// documentedMetrics reads the metrics table of docs/configuration.md:
// metric family -> type. A row may name several families.
func documentedMetrics(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| (`svc_.*?) \\| (gauge|counter|histogram) \\|")
	name := regexp.MustCompile("`(svc_[a-z_]+)(\\{[a-z,]*\\})?`")
	types := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		for _, n := range name.FindAllStringSubmatch(m[1], -1) {
			types[n[1]] = m[2]
		}
	}
	if len(types) < 15 {
		t.Fatalf("docs/configuration.md: found %d metrics in its table, want them all", len(types))
	}
	return types
}
