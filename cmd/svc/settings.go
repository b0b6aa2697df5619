package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/svc-sandbox/svc"
)

// A setting is one configuration value of API.md: an environment variable
// and the same as a flag in kebab case; a flag wins over the environment,
// the environment over a --config file.
type setting struct {
	env  string
	def  string // shown in --help; "" when computed
	help string
	set  func(c *svc.Config, v string) error
}

// flagName is the kebab-case flag of an environment name.
func (s setting) flagName() string {
	return strings.ReplaceAll(strings.ToLower(s.env), "_", "-")
}

func sizeSetting(env, def, help string, field func(*svc.Config) *int64) setting {
	return setting{env, def, help, func(c *svc.Config, v string) error {
		n, err := parseSize(v)
		if err != nil {
			return err
		}
		*field(c) = n
		return nil
	}}
}

func intSetting(env, def, help string, field func(*svc.Config) *int) setting {
	return setting{env, def, help, func(c *svc.Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return fmt.Errorf("want a positive whole number, got %q", v)
		}
		*field(c) = n
		return nil
	}}
}

func msSetting(env, def, help string, field func(*svc.Config) *time.Duration) setting {
	return setting{env, def, help, func(c *svc.Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return fmt.Errorf("want a positive whole number of milliseconds, got %q", v)
		}
		*field(c) = time.Duration(n) * time.Millisecond
		return nil
	}}
}

// librarySettings configure the sandbox itself (svc.Config).
var librarySettings = []setting{
	sizeSetting("MEMORY_MAX", "256MiB", "memory per task (swap 0)", func(c *svc.Config) *int64 { return &c.Limits.MemoryMax }),
	setting{"PIDS_MAX", "64", "processes and threads per task", func(c *svc.Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return fmt.Errorf("want a positive whole number, got %q", v)
		}
		c.Limits.PidsMax = n
		return nil
	}},
	setting{"CPU_MAX", "100000 100000", `cgroup cpu.max per task, "<quota> <period>" in microseconds`, func(c *svc.Config, v string) error {
		m, err := svc.ParseCPUMax(v)
		c.Limits.CPUMax = m
		return err
	}},
	msSetting("WALL_TIMEOUT_MS", "10000", "wall time per task", func(c *svc.Config) *time.Duration { return &c.Limits.WallTimeout }),
	msSetting("CPU_TIME_LIMIT_MS", "5000", "CPU time per task, over all its processes", func(c *svc.Config) *time.Duration { return &c.Limits.CPUTimeLimit }),
	sizeSetting("OUTPUT_LIMIT_BYTES", "1MiB", "output per stream of a task", func(c *svc.Config) *int64 { return &c.Limits.OutputLimit }),
	sizeSetting("REQUEST_OUTPUT_LIMIT_BYTES", "16MiB", "output of all tasks of a request", func(c *svc.Config) *int64 { return &c.Limits.RequestOutputLimit }),
	sizeSetting("WORKSPACE_SIZE_BYTES", "256MiB", "size of /svc (and of /tmp) per request", func(c *svc.Config) *int64 { return &c.WorkspaceSize }),
	intSetting("MAX_CONCURRENCY", "", "task slots (default max(CPUs, MAX_PARALLEL_TASKS))", func(c *svc.Config) *int { return &c.Limits.MaxConcurrency }),
	msSetting("OVERALL_TIMEOUT_MS", "60000", "wall time per request", func(c *svc.Config) *time.Duration { return &c.Limits.OverallTimeout }),
	intSetting("MAX_STEPS_PER_REQUEST", "32", "steps per request", func(c *svc.Config) *int { return &c.Limits.MaxSteps }),
	intSetting("MAX_PARALLEL_TASKS", "8", "tasks per parallel step", func(c *svc.Config) *int { return &c.Limits.MaxParallelTasks }),
	sizeSetting("EXECUTE_BODY_LIMIT_BYTES", "16MiB", "body of POST /execute", func(c *svc.Config) *int64 { return &c.Limits.ExecuteBodyLimit }),
	sizeSetting("UPLOAD_FILE_LIMIT_BYTES", "64MiB", "one upload", func(c *svc.Config) *int64 { return &c.Limits.UploadFileLimit }),
	setting{"ALLOWED_SANDBOX_PROFILES", "compile_v2,native_v2", "sandbox profiles tasks may ask for", func(c *svc.Config, v string) error {
		c.AllowedProfiles = nil
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				c.AllowedProfiles = append(c.AllowedProfiles, svc.Profile(p))
			}
		}
		if len(c.AllowedProfiles) == 0 {
			return fmt.Errorf("want at least one profile")
		}
		return nil
	}},
	setting{"DEFAULT_SANDBOX_PROFILE", "compile_v2", "profile of tasks that name none", func(c *svc.Config, v string) error {
		c.DefaultProfile = svc.Profile(v)
		return nil
	}},
	setting{"STATE_DIR", "/var/lib/svc", "workspaces and state", func(c *svc.Config, v string) error {
		c.StateDir = v
		return nil
	}},
	setting{"ROOTFS", "/", "root filesystem whose system directories sandboxes see read-only", func(c *svc.Config, v string) error {
		c.RootFS = v
		return nil
	}},
}

// parseSize parses a whole number of bytes with an optional binary
// suffix: K, KiB, M, MiB, G, GiB (64M and 64MiB are the same).
func parseSize(s string) (int64, error) {
	num := strings.TrimRight(s, "KMGTiBkmgtib")
	unit := strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(s[len(num):], "B"), "i"))
	mult := map[string]int64{"": 1, "K": svc.KiB, "M": svc.MiB, "G": svc.GiB, "T": 1 << 40}[unit]
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || mult == 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("want a positive size in bytes or with a binary suffix (64M, 64MiB, 1G), got %q", s)
	}
	return n * mult, nil
}

// configSource collects setting values: a --config file, the environment,
// then flags, each overriding the one before.
type configSource struct {
	settings []setting
	file     *string
	flags    map[string]*string
}

// register adds --config and one flag per setting to fs.
func register(fs *pflag.FlagSet, settings []setting) *configSource {
	cs := &configSource{settings: settings, flags: map[string]*string{}}
	cs.file = fs.String("config", "", "file of KEY=VALUE lines (the environment names below); the environment and flags override it")
	for _, s := range settings {
		help := s.help + " (" + s.env + ")"
		cs.flags[s.env] = fs.String(s.flagName(), "", help)
		if s.def != "" {
			fs.Lookup(s.flagName()).DefValue = s.def
		}
	}
	return cs
}

// apply sets cfg from the sources. Errors name the setting.
func (cs *configSource) apply(fs *pflag.FlagSet, cfg *svc.Config) error {
	values := map[string]string{}
	if *cs.file != "" {
		f, err := os.Open(*cs.file)
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
				return fmt.Errorf("--config %s:%d: want KEY=VALUE", *cs.file, n)
			}
			k = strings.TrimSpace(k)
			if !cs.known(k) {
				return fmt.Errorf("--config %s:%d: unknown setting %s", *cs.file, n, k)
			}
			values[k] = strings.Trim(strings.TrimSpace(v), `"`)
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("--config: %w", err)
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
		if err := s.set(cfg, v); err != nil {
			return fmt.Errorf("setting %s (--%s): %w", s.env, s.flagName(), err)
		}
	}
	return nil
}

func (cs *configSource) known(env string) bool {
	for _, s := range cs.settings {
		if s.env == env {
			return true
		}
	}
	return false
}
