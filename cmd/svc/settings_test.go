package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/svc-sandbox/svc"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"1": 1, "4096": 4096, "64K": 64 << 10, "64KiB": 64 << 10, "64M": 64 << 20,
		"64MiB": 64 << 20, "1G": 1 << 30, "1GiB": 1 << 30, "2g": 2 << 30, "1Gi": 1 << 30, "3B": 3,
	} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "1.5M", "M", "12X", "64MB5", "99999999999999999999", "1 G", "1GiBB"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
	// SI-looking suffixes are refused, saying what to write instead.
	for in, want := range map[string]string{"1GB": "write 1G or 1GiB for 1 x 2^30 bytes", "500mb": "write 500M or 500MiB for 500 x 2^20 bytes",
		"4KB": "2^10", "2TB": "2^40"} {
		_, err := parseSize(in)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "SI suffix") {
			t.Errorf("parseSize(%q): %v, want a refusal saying %q", in, err, want)
		}
	}
	if _, err := parse(t, "--memory-max", "1GB"); err == nil || !strings.Contains(err.Error(), "MEMORY_MAX") {
		t.Errorf("--memory-max 1GB: %v, want a refusal naming the setting", err)
	}
}

// parse applies args and the environment to fresh options, as svc serve
// does.
func parse(t *testing.T, args ...string) (options, error) {
	t.Helper()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	cs := register(fs, allSettings)
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	var o options
	if err := cs.apply(fs, &o); err != nil {
		return o, err
	}
	return o, o.check()
}

func TestSettingsPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "svc.conf")
	os.WriteFile(file, []byte("# comment\nMEMORY_MAX=32M\nWALL_TIMEOUT_MS=1000\nPIDS_MAX=10\nLISTEN_ADDR=0.0.0.0:1\n"), 0o644)
	t.Setenv("WALL_TIMEOUT_MS", "2000")
	t.Setenv("PIDS_MAX", "20")
	o, err := parse(t, "--config", file, "--pids-max", "30")
	if err != nil {
		t.Fatal(err)
	}
	if o.Limits.MemoryMax != 32<<20 || o.Limits.WallTimeout != 2*time.Second || o.Limits.PidsMax != 30 || o.listen != "0.0.0.0:1" {
		t.Errorf("got memory %d wall %v pids %d listen %s", o.Limits.MemoryMax, o.Limits.WallTimeout, o.Limits.PidsMax, o.listen)
	}
}

// TestDefaults checks that with no configuration the options are API.md's
// defaults.
func TestDefaults(t *testing.T) {
	o, err := parse(t)
	if err != nil {
		t.Fatal(err)
	}
	d := svc.DefaultLimits()
	d.MaxConcurrency = 0 // computed by the library
	if o.Limits != d {
		t.Errorf("limits %+v\nwant %+v", o.Limits, d)
	}
	if o.listen != "127.0.0.1:8080" || o.StateDir != "/var/lib/svc" || o.RootFS != "/" ||
		o.WorkspaceSize != 256*svc.MiB || o.noAuth || o.rateLimit != 0 || o.fileStoreDir != "" ||
		o.fileStoreMax != 4*svc.GiB || o.fileTTL != 24*time.Hour || o.maxUploads != 8 ||
		!o.cacheEnabled || o.cacheURL != nil || o.cacheTTL != 24*time.Hour || o.cacheNamespace != "default" ||
		o.shutdownTimeout != 10*time.Second || o.goBuildCache != "" || o.imageID != "" || o.toolchains != nil || len(o.apiKeys) != 0 ||
		!slices.Equal(o.AllowedProfiles, []svc.Profile{"compile_v2", "native_v2"}) || o.DefaultProfile != "compile_v2" {
		t.Errorf("defaults: %+v", o)
	}
}

// TestSettingsCoverAPI checks that every setting of API.md's
// configuration table is an environment variable and a flag of svc serve,
// and that svc serve --help documents each with its default.
func TestSettingsCoverAPI(t *testing.T) {
	api, err := os.ReadFile("../../../shared/API.md")
	if err != nil {
		t.Skipf("API.md is not beside the repository: %v", err)
	}
	_, table, _ := strings.Cut(string(api), "## Configuration")
	names := regexp.MustCompile("(?m)^\\| ([A-Z_]+) \\|").FindAllStringSubmatch(table, -1)
	if len(names) < 25 {
		t.Fatalf("found only %d settings in API.md", len(names))
	}
	var help bytes.Buffer
	if err := serveCmd([]string{"--help"}, &help); !errors.Is(err, pflag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	for _, n := range append(names, []string{"", "API_KEYS"}, []string{"", "API_KEYS_FILE"}, []string{"", "NO_AUTH"}) {
		env := n[1]
		i := slices.IndexFunc(allSettings, func(s setting) bool { return s.env == env })
		if i < 0 {
			t.Errorf("no setting %s", env)
			continue
		}
		s := allSettings[i]
		line := ""
		for _, l := range strings.Split(help.String(), "\n") {
			if strings.Contains(l, "--"+s.flagName()+" ") || strings.HasSuffix(l, "--"+s.flagName()) {
				line = l
			}
		}
		if !strings.Contains(line, "("+env) {
			t.Errorf("--help does not document --%s (%s)", s.flagName(), env)
		}
		if s.def != "" && !strings.Contains(line, "default "+s.def+")") {
			t.Errorf("--help does not show the default of %s (%q):\n%s", env, s.def, line)
		}
	}
	if t.Failed() {
		t.Log(help.String())
	}
}

func TestSettingsErrorsNameTheSetting(t *testing.T) {
	for env, val := range map[string]string{
		"MEMORY_MAX": "lots", "WALL_TIMEOUT_MS": "0", "CPU_MAX": "1 2 3", "MAX_STEPS_PER_REQUEST": "-4",
		"ALLOWED_SANDBOX_PROFILES": ",", "DEFAULT_SANDBOX_PROFILE": "native_v3", "WORKSPACE_SIZE_BYTES": "1K",
		"LISTEN_ADDR": "8080", "API_KEYS": "has space", "API_KEYS_FILE": "/no/such/file", "NO_AUTH": "yes",
		"RATE_LIMIT_PER_MINUTE": "-1", "FILESTORE_DIR": "", "FILESTORE_MAX_BYTES": "0", "FILE_TTL_SECS": "0",
		"MAX_CONCURRENT_UPLOADS": "0", "CACHE_ENABLED": "maybe", "CACHE_URL": "ftp://x", "CACHE_TTL_SECS": "x",
		"CACHE_NAMESPACE": "a/b", "SHUTDOWN_TIMEOUT_MS": "0", "SVC_IMAGE_ID": "", "SVC_TOOLCHAINS": ",",
		"STATE_DIR": "", "MAX_CONCURRENCY": "0", "OVERALL_TIMEOUT_MS": "1.5",
		"QUEUE_TIMEOUT_MS": "-1",
	} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, val)
			_, err := parse(t)
			if err == nil || !strings.Contains(err.Error(), env) {
				t.Fatalf("got %v, want an error naming %s", err, env)
			}
		})
	}
	t.Run("MAX_PARALLEL_TASKS over MAX_CONCURRENCY", func(t *testing.T) {
		_, err := parse(t, "--max-concurrency", "4", "--max-parallel-tasks", "6")
		if err == nil || !strings.Contains(err.Error(), "MAX_PARALLEL_TASKS") || !strings.Contains(err.Error(), "MAX_CONCURRENCY") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestServerSettings(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys")
	os.WriteFile(keys, []byte("# rotated monthly\nkey-from-file\n\nsecond-key\n"), 0o600)
	t.Setenv("API_KEYS", "a-key, b-key")
	o, err := parse(t, "--no-auth", "--cache-enabled=false", "--api-keys-file", keys,
		"--cache-url", "redis://cache.internal:6379/2", "--svc-toolchains", "gcc-12, python-3.11",
		"--rate-limit-per-minute", "0", "--file-ttl-secs", "60", "--shutdown-timeout-ms", "2500")
	if err != nil {
		t.Fatal(err)
	}
	if !o.noAuth || o.cacheEnabled || !slices.Equal(o.apiKeys, []string{"a-key", "b-key"}) ||
		!slices.Equal(o.apiKeysFile, []string{"key-from-file", "second-key"}) ||
		o.cacheURL.Scheme != "redis" || !slices.Equal(o.toolchains, []string{"gcc-12", "python-3.11"}) ||
		o.fileTTL != time.Minute || o.shutdownTimeout != 2500*time.Millisecond {
		t.Errorf("%+v", o)
	}
	if o, err := parse(t, "--cache-url", "dir:///srv/cache"); err != nil || o.cacheURL.Path != "/srv/cache" {
		t.Errorf("dir URL: %v %v", o.cacheURL, err)
	}
	for _, bad := range []string{"dir://relative/path", "redis://nohostport", "redis://h:1/x"} {
		if _, err := parse(t, "--cache-url", bad); err == nil {
			t.Errorf("CACHE_URL %s accepted", bad)
		}
	}
}

// TestQueueTimeoutSetting: QUEUE_TIMEOUT_MS is 0 (no waiting) unless set;
// 0 may be set too.
func TestQueueTimeoutSetting(t *testing.T) {
	if o, err := parse(t); err != nil || o.QueueTimeout != 0 {
		t.Errorf("default: %v %v", o.QueueTimeout, err)
	}
	t.Setenv("QUEUE_TIMEOUT_MS", "60000")
	if o, err := parse(t); err != nil || o.QueueTimeout != time.Minute {
		t.Errorf("QUEUE_TIMEOUT_MS=60000: %v %v", o.QueueTimeout, err)
	}
	if o, err := parse(t, "--queue-timeout-ms", "0"); err != nil || o.QueueTimeout != 0 {
		t.Errorf("--queue-timeout-ms 0: %v %v", o.QueueTimeout, err)
	}
}

// TestGoBuildCacheSetting: the prepared Go build cache is in the state
// directory unless the setting names another directory or turns it off.
func TestGoBuildCacheSetting(t *testing.T) {
	for _, c := range []struct {
		set  bool
		v    string
		want string
	}{
		{false, "", "/state/gocache"},
		{true, "", ""},
		{true, "off", ""},
		{true, "/srv/gocache", "/srv/gocache"},
	} {
		if c.set {
			t.Setenv("GO_BUILD_CACHE_DIR", c.v)
		}
		o, err := parse(t)
		if err != nil {
			t.Fatal(err)
		}
		if got := o.goBuildCacheDir("/state"); got != c.want {
			t.Errorf("GO_BUILD_CACHE_DIR set %v to %q: %q, want %q", c.set, c.v, got, c.want)
		}
	}
	o, err := parse(t, "--go-build-cache-dir", "/flag/gocache")
	if err != nil || o.goBuildCacheDir("/state") != "/flag/gocache" {
		t.Errorf("--go-build-cache-dir: %q %v", o.goBuildCacheDir("/state"), err)
	}
}
