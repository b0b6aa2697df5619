package main

import (
	"bufio"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/svc-sandbox/svc"
)

// A setting is one configuration value of API.md: an environment variable
// and the same as a flag in kebab case; a flag wins over the environment,
// the environment over a --config file, and that over the default.
//
// A setting whose default is "true" or "false" is a boolean: its flag
// alone (--no-auth) means true.
type setting struct {
	env  string
	def  string // the default, applied first and shown in --help; "" when computed
	help string
	set  func(o *options, v string) error
}

// options are what the settings set: the library's Config and the
// server's own settings.
type options struct {
	svc.Config

	listen          string
	metricsAddr     string   // METRICS_ADDR; "": none
	apiKeys         []string // API_KEYS
	apiKeysFile     []string // the keys of API_KEYS_FILE
	noAuth          bool
	rateLimit       int
	fileStoreDir    string // "": <state dir>/files
	fileStoreURL    string // FILESTORE_URL; "": the directory is the store
	fileStoreMax    int64
	fileTTL         time.Duration
	maxUploads      int
	cacheEnabled    bool
	cacheURL        *url.URL // nil: dir://<state dir>/cache
	cacheTTL        time.Duration
	cacheNamespace  string
	cacheTimeout    time.Duration
	bodyIdleTimeout time.Duration
	shutdownTimeout time.Duration
	goBuildCache    string   // "": <state dir>/gocache; "off": none
	imageID         string   // "": detected
	toolchains      []string // nil: detected
}

// flagName is the kebab-case flag of an environment name.
func (s setting) flagName() string {
	return strings.ReplaceAll(strings.ToLower(s.env), "_", "-")
}

func (s setting) boolean() bool { return s.def == "true" || s.def == "false" }

func sizeSetting(env, def, help string, min int64, field func(*options) *int64) setting {
	return setting{env, def, help, func(o *options, v string) error {
		n, err := parseSize(v)
		if err != nil {
			return err
		}
		if n < min {
			return fmt.Errorf("want at least %d bytes, got %q", min, v)
		}
		*field(o) = n
		return nil
	}}
}

func intSetting(env, def, help string, field func(*options) *int) setting {
	return setting{env, def, help, func(o *options, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return fmt.Errorf("want a positive whole number, got %q", v)
		}
		*field(o) = n
		return nil
	}}
}

func durationSetting(env, def, help string, unit time.Duration, field func(*options) *time.Duration) setting {
	name := map[time.Duration]string{time.Millisecond: "milliseconds", time.Second: "seconds"}[unit]
	return setting{env, def, help, func(o *options, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n > int64(1<<62)/int64(unit) {
			return fmt.Errorf("want a positive whole number of %s, got %q", name, v)
		}
		*field(o) = time.Duration(n) * unit
		return nil
	}}
}

func boolSetting(env, def, help string, field func(*options) *bool) setting {
	return setting{env, def, help, func(o *options, v string) error {
		switch v {
		case "true", "1":
			*field(o) = true
		case "false", "0":
			*field(o) = false
		default:
			return fmt.Errorf("want true, false, 1 or 0, got %q", v)
		}
		return nil
	}}
}

func stringSetting(env, def, help string, field func(*options) *string) setting {
	return setting{env, def, help, func(o *options, v string) error {
		if v == "" {
			return fmt.Errorf("want a value")
		}
		*field(o) = v
		return nil
	}}
}

// list splits a comma-separated value, dropping empty items.
func list(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func profile(v string) (svc.Profile, error) {
	p := svc.Profile(v)
	if !slices.Contains(svc.Profiles(), p) {
		return "", fmt.Errorf("unknown profile %q; known: %v", v, svc.Profiles())
	}
	return p, nil
}

// librarySettings configure the sandbox itself (svc.Config).
var librarySettings = []setting{
	sizeSetting("MEMORY_MAX", "256MiB", "memory per task (swap 0)", 4*svc.MiB, func(o *options) *int64 { return &o.Limits.MemoryMax }),
	{"PIDS_MAX", "64", "processes and threads per task", func(o *options, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return fmt.Errorf("want a positive whole number, got %q", v)
		}
		o.Limits.PidsMax = n
		return nil
	}},
	{"CPU_MAX", "100000 100000", `cgroup cpu.max per task, "<quota> <period>" in microseconds`, func(o *options, v string) error {
		m, err := svc.ParseCPUMax(v)
		o.Limits.CPUMax = m
		return err
	}},
	durationSetting("WALL_TIMEOUT_MS", "10000", "wall time per task, milliseconds", time.Millisecond, func(o *options) *time.Duration { return &o.Limits.WallTimeout }),
	durationSetting("CPU_TIME_LIMIT_MS", "5000", "CPU time per task over all its processes, milliseconds", time.Millisecond, func(o *options) *time.Duration { return &o.Limits.CPUTimeLimit }),
	sizeSetting("OUTPUT_LIMIT_BYTES", "1MiB", "output per stream of a task", 1, func(o *options) *int64 { return &o.Limits.OutputLimit }),
	sizeSetting("REQUEST_OUTPUT_LIMIT_BYTES", "16MiB", "output of all tasks of a request", 1, func(o *options) *int64 { return &o.Limits.RequestOutputLimit }),
	sizeSetting("WORKSPACE_SIZE_BYTES", "256MiB", "size of /svc and /tmp together (one tmpfs) per request", svc.MiB, func(o *options) *int64 { return &o.WorkspaceSize }),
	intSetting("MAX_CONCURRENCY", "", "task slots; a request holds as many as its widest step has tasks; default max(CPUs, MAX_PARALLEL_TASKS)", func(o *options) *int { return &o.Limits.MaxConcurrency }),
	{"QUEUE_TIMEOUT_MS", "0", "how long a request that finds too few free task slots waits for them, in arrival order, before it answers capacity_exhausted, milliseconds; its OVERALL_TIMEOUT_MS starts once it holds them; 0 answers at once", func(o *options, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > int64(1<<62)/int64(time.Millisecond) {
			return fmt.Errorf("want a whole number of milliseconds, 0 or more, got %q", v)
		}
		o.QueueTimeout = time.Duration(n) * time.Millisecond
		return nil
	}},
	durationSetting("OVERALL_TIMEOUT_MS", "60000", "wall time per request, milliseconds", time.Millisecond, func(o *options) *time.Duration { return &o.Limits.OverallTimeout }),
	intSetting("MAX_STEPS_PER_REQUEST", "32", "steps per request", func(o *options) *int { return &o.Limits.MaxSteps }),
	intSetting("MAX_PARALLEL_TASKS", "8", "tasks per parallel step; at most MAX_CONCURRENCY", func(o *options) *int { return &o.Limits.MaxParallelTasks }),
	sizeSetting("EXECUTE_BODY_LIMIT_BYTES", "16MiB", "body of POST /execute", 1, func(o *options) *int64 { return &o.Limits.ExecuteBodyLimit }),
	sizeSetting("UPLOAD_FILE_LIMIT_BYTES", "64MiB", "one upload", 1, func(o *options) *int64 { return &o.Limits.UploadFileLimit }),
	{"ALLOWED_SANDBOX_PROFILES", "compile_v2,native_v2", "sandbox profiles tasks may ask for, comma-separated", func(o *options, v string) error {
		o.AllowedProfiles = nil
		for _, s := range list(v) {
			p, err := profile(s)
			if err != nil {
				return err
			}
			o.AllowedProfiles = append(o.AllowedProfiles, p)
		}
		if len(o.AllowedProfiles) == 0 {
			return fmt.Errorf("want at least one profile")
		}
		return nil
	}},
	{"DEFAULT_SANDBOX_PROFILE", "compile_v2", "profile of tasks that name none", func(o *options, v string) error {
		p, err := profile(v)
		o.DefaultProfile = p
		return err
	}},
	stringSetting("STATE_DIR", "/var/lib/svc", "workspaces and state", func(o *options) *string { return &o.StateDir }),
	stringSetting("ROOTFS", "/", "root filesystem whose system directories sandboxes see read-only", func(o *options) *string { return &o.RootFS }),
	{"SANDBOX_UID_BASE", "1000000", "first host uid and gid of the sandbox identities: two for each running request and each prepared ahead, 2 x (MAX_CONCURRENCY + 2 x min(max(MAX_CONCURRENCY/4, 1), 4)) at most; the range must be unused on the host; it is locked in /run/svc/uids, and one that overlaps another instance's stops this one at start", func(o *options, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 65536 || n > 1<<31 {
			return fmt.Errorf("want a whole number from 65536 to 2^31, got %q", v)
		}
		o.UIDBase = n
		return nil
	}},
}

// cacheNamespaceRE is what a cache namespace may be.
var cacheNamespaceRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// serverSettings configure svc serve beyond the sandbox.
var serverSettings = []setting{
	{"LISTEN_ADDR", "127.0.0.1:8080", "address to listen on, host:port", func(o *options, v string) error {
		if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
			return fmt.Errorf("want host:port, got %q", v)
		}
		o.listen = v
		return nil
	}},
	{"METRICS_ADDR", "", "address, host:port, of a second listener that serves GET /metrics alone and without an API key, for Prometheus; bind it where only Prometheus reaches; empty serves none (GET /metrics is then on LISTEN_ADDR only, with a key)", func(o *options, v string) error {
		if v == "" {
			o.metricsAddr = ""
			return nil
		}
		if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
			return fmt.Errorf("want host:port, got %q", v)
		}
		o.metricsAddr = v
		return nil
	}},
	{"API_KEYS", "", "API keys, comma-separated; several allow rotation; with no key at all, one is generated and logged", func(o *options, v string) error {
		keys, err := apiKeys(list(v))
		o.apiKeys = keys
		return err
	}},
	{"API_KEYS_FILE", "", "file of API keys, one per line (# comments); added to API_KEYS", func(o *options, v string) error {
		b, err := os.ReadFile(v)
		if err != nil {
			return err
		}
		var lines []string
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
		if len(lines) == 0 {
			return fmt.Errorf("%s holds no key", v)
		}
		o.apiKeysFile, err = apiKeys(lines)
		return err
	}},
	boolSetting("NO_AUTH", "false", "serve without API keys: loopback use only", func(o *options) *bool { return &o.noAuth }),
	{"RATE_LIMIT_PER_MINUTE", "0", "requests per minute per API key, with the same burst; 0 is off", func(o *options, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("want a whole number, 0 or more, got %q", v)
		}
		o.rateLimit = n
		return nil
	}},
	stringSetting("FILESTORE_DIR", "", "directory of the file store; default <STATE_DIR>/files", func(o *options) *string { return &o.fileStoreDir }),
	{"FILESTORE_URL", "", "a file store shared by instances: s3://bucket/prefix?endpoint=host:port&region=name (http://host:port for plain HTTP; cache_bytes=, timeout_ms=), keys from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or credentials_file=; FILESTORE_DIR is then this instance's cache of it; empty: FILESTORE_DIR is the store", func(o *options, v string) error {
		if v != "" && !strings.HasPrefix(v, "s3://") {
			return fmt.Errorf("want s3://bucket/prefix?endpoint=host:port&region=name, got %q", v)
		}
		o.fileStoreURL = v
		return nil
	}},
	sizeSetting("FILESTORE_MAX_BYTES", "4GiB", "total size of stored files", 1, func(o *options) *int64 { return &o.fileStoreMax }),
	durationSetting("FILE_TTL_SECS", "86400", "seconds a stored file is kept", time.Second, func(o *options) *time.Duration { return &o.fileTTL }),
	intSetting("MAX_CONCURRENT_UPLOADS", "8", "uploads served at once", func(o *options) *int { return &o.maxUploads }),
	durationSetting("BODY_IDLE_TIMEOUT_MS", "10000", "how long a request body (POST /execute, POST /file) may pause: a client that sends nothing for this many milliseconds is answered 408 cancelled and loses its upload slot; a slow but steady client is not cut off", time.Millisecond, func(o *options) *time.Duration { return &o.bodyIdleTimeout }),
	boolSetting("CACHE_ENABLED", "true", "step cache on or off", func(o *options) *bool { return &o.cacheEnabled }),
	{"CACHE_URL", "", "step cache store: dir:///path, or redis://host:port/db shared by instances; default dir://<STATE_DIR>/cache", func(o *options, v string) error {
		u, err := parseCacheURL(v)
		o.cacheURL = u
		return err
	}},
	durationSetting("CACHE_TTL_SECS", "86400", "seconds a cached layer is kept", time.Second, func(o *options) *time.Duration { return &o.cacheTTL }),
	durationSetting("CACHE_TIMEOUT_MS", "1000", "how long each call to the step cache's store (a lookup, a store) may take, milliseconds; a request waits for its lookups at most this long each, before it takes its task slots, and a store that fails or overruns it is left alone (misses, no calls) for 1 s doubling to 30 s; raise it when the largest layers take longer to fetch", time.Millisecond, func(o *options) *time.Duration { return &o.cacheTimeout }),
	{"CACHE_NAMESPACE", "default", "cache namespace; instances share layers within one", func(o *options, v string) error {
		if !cacheNamespaceRE.MatchString(v) {
			return fmt.Errorf("want 1 to 64 of A-Z a-z 0-9 . _ -, got %q", v)
		}
		o.cacheNamespace = v
		return nil
	}},
	{"GO_BUILD_CACHE_DIR", "", "directory in which a build cache of the Go standard library is prepared once per image (SVC_IMAGE_ID), in the background after start (measured: 71 s of wall time, 64 s of CPU and 544 MiB on an idle 2-CPU host, 4 minutes on a busy one; svc prepare builds it ahead), and given to every request as a private copy, so that go build compiles only the program; while it is prepared, a request with a task running go waits for it, within that task's wall time limit; off or empty disables it; default <STATE_DIR>/gocache", func(o *options, v string) error {
		if v == "" {
			v = "off"
		}
		o.goBuildCache = v
		return nil
	}},
	durationSetting("SHUTDOWN_TIMEOUT_MS", "10000", "on SIGTERM or SIGINT, exit within this many milliseconds", time.Millisecond, func(o *options) *time.Duration { return &o.shutdownTimeout }),
	stringSetting("SVC_IMAGE_ID", "", "image identity; default derived from ROOTFS", func(o *options) *string { return &o.imageID }),
	{"SVC_TOOLCHAINS", "", "toolchains, comma-separated name-version list; default detected in ROOTFS", func(o *options, v string) error {
		o.toolchains = list(v)
		if len(o.toolchains) == 0 {
			return fmt.Errorf("want at least one name-version")
		}
		return nil
	}},
}

// allSettings are every setting; a --config file may hold any of them.
var allSettings = slices.Concat(librarySettings, serverSettings)

// apiKeys checks API keys: visible ASCII, no spaces, at most 256 bytes.
func apiKeys(keys []string) ([]string, error) {
	for i, k := range keys {
		if len(k) > 256 {
			return nil, fmt.Errorf("key %d: longer than 256 characters", i+1)
		}
		for _, c := range []byte(k) {
			if c < 0x21 || c > 0x7e {
				return nil, fmt.Errorf("key %d: only visible ASCII characters, no spaces", i+1)
			}
		}
	}
	return keys, nil
}

// parseCacheURL checks a CACHE_URL: dir:///absolute/path or
// redis://host:port[/db].
func parseCacheURL(v string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil {
		return nil, fmt.Errorf("want dir:///path or redis://host:port/db: %v", err)
	}
	switch u.Scheme {
	case "dir":
		if u.Host != "" || !strings.HasPrefix(u.Path, "/") {
			return nil, fmt.Errorf("want dir:///absolute/path, got %q", v)
		}
	case "redis":
		if _, port, err := net.SplitHostPort(u.Host); err != nil || port == "" {
			return nil, fmt.Errorf("want redis://host:port/db, got %q", v)
		}
		if db := strings.TrimPrefix(u.Path, "/"); db != "" {
			if n, err := strconv.Atoi(db); err != nil || n < 0 {
				return nil, fmt.Errorf("want a database number after the port, got %q", v)
			}
		}
	default:
		return nil, fmt.Errorf("want a dir:// or redis:// URL, got %q", v)
	}
	return u, nil
}

// sizeUnits are the suffixes of a size, upper-cased: binary ones, as
// API.md's sizes are (64M and 64MiB are the same, 1G is 2^30 bytes);
// 1Gi, as Kubernetes writes it, too.
var sizeUnits = map[string]int64{"": 1, "B": 1,
	"K": svc.KiB, "KI": svc.KiB, "KIB": svc.KiB, "M": svc.MiB, "MI": svc.MiB, "MIB": svc.MiB,
	"G": svc.GiB, "GI": svc.GiB, "GIB": svc.GiB, "T": 1 << 40, "TI": 1 << 40, "TIB": 1 << 40}

// parseSize parses a whole number of bytes with an optional binary
// suffix (sizeUnits), in any case. An SI-looking suffix (KB, MB, GB, TB)
// is refused rather than read as either: 1GB is 10^9 bytes to some and
// 2^30 to others.
func parseSize(s string) (int64, error) {
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		i = len(s)
	}
	num, unit := s[:i], strings.ToUpper(s[i:])
	if len(unit) == 2 && unit[1] == 'B' && strings.IndexByte("KMGT", unit[0]) >= 0 {
		return 0, fmt.Errorf("%q: sizes are binary, and an SI suffix (KB, MB, GB, TB) is refused rather than guessed: "+
			"write %s%s or %s%siB for %s x 2^%d bytes, or the number of bytes", s, num, unit[:1], num, unit[:1], num,
			10*(strings.IndexByte("KMGT", unit[0])+1))
	}
	mult, ok := sizeUnits[unit]
	n, err := strconv.ParseInt(num, 10, 64)
	if !ok || err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("want a positive size in bytes or with a binary suffix (64M, 64MiB, 1G = 1GiB = 2^30 bytes), got %q", s)
	}
	return n * mult, nil
}

// configSource collects setting values: the defaults, a --config file,
// the environment, then flags, each overriding the one before.
type configSource struct {
	settings []setting
	file     *string
	flags    map[string]*string
}

// kind names the type of a setting's value in --help, by API.md's naming
// conventions: sizes end in _BYTES (and MEMORY_MAX), durations in _MS or
// _SECS; a numeric default or a MAX_ name is a whole number.
func (s setting) kind() string {
	switch {
	case s.boolean():
		return "bool"
	case strings.HasSuffix(s.env, "_BYTES") || s.env == "MEMORY_MAX":
		return "size"
	case strings.HasSuffix(s.env, "_MS"):
		return "ms"
	case strings.HasSuffix(s.env, "_SECS"):
		return "secs"
	case strings.HasPrefix(s.env, "MAX_"):
		return "int"
	}
	if _, err := strconv.Atoi(s.def); err == nil {
		return "int"
	}
	return "string"
}

// textValue is the flag of a setting: the text, parsed later by apply.
type textValue struct {
	text *string
	kind string
}

func (v textValue) String() string     { return *v.text }
func (v textValue) Set(s string) error { *v.text = s; return nil }
func (v textValue) Type() string       { return v.kind }

// register adds --config and one flag per setting to fs. The help of each
// names its environment variable and its default.
func register(fs *pflag.FlagSet, settings []setting) *configSource {
	cs := &configSource{settings: settings, flags: map[string]*string{}}
	cs.file = fs.String("config", "", "file of KEY=VALUE lines (the environment names below); the environment and flags override it")
	for _, s := range settings {
		help := s.help + " (" + s.env
		if s.def != "" {
			help += ", default " + s.def
		}
		help += ")"
		cs.flags[s.env] = new(string)
		f := fs.VarPF(textValue{cs.flags[s.env], s.kind()}, s.flagName(), "", help)
		if s.boolean() {
			f.NoOptDefVal = "true"
		}
	}
	return cs
}

// apply sets o from the sources. Errors name the setting.
func (cs *configSource) apply(fs *pflag.FlagSet, o *options) error {
	values := map[string]string{}
	for _, s := range cs.settings {
		if s.def != "" {
			values[s.env] = s.def
		}
	}
	if *cs.file != "" {
		if err := readConfigFile(*cs.file, values); err != nil {
			return err
		}
	}
	for _, s := range cs.settings {
		if v, ok := os.LookupEnv(s.env); ok {
			values[s.env] = v
		}
		if fs.Changed(s.flagName()) {
			values[s.env] = *cs.flags[s.env]
		}
	}
	for _, s := range cs.settings {
		v, ok := values[s.env]
		if !ok {
			continue
		}
		if err := s.set(o, v); err != nil {
			return fmt.Errorf("setting %s (--%s): %w", s.env, s.flagName(), err)
		}
	}
	return nil
}

// readConfigFile adds the KEY=VALUE lines of file to values. Any known
// setting may appear, also one the command at hand does not use.
func readConfigFile(file string, values map[string]string) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("--config %s:%d: want KEY=VALUE", file, n)
		}
		k = strings.TrimSpace(k)
		if !slices.ContainsFunc(allSettings, func(s setting) bool { return s.env == k }) {
			return fmt.Errorf("--config %s:%d: unknown setting %s", file, n, k)
		}
		values[k] = strings.Trim(strings.TrimSpace(v), `"`)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	return nil
}
