package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/svc-sandbox/svc"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"1": 1, "4096": 4096, "64K": 64 << 10, "64KiB": 64 << 10, "64M": 64 << 20,
		"64MiB": 64 << 20, "1G": 1 << 30, "1GiB": 1 << 30, "2g": 2 << 30,
	} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "1.5M", "M", "12X", "64MB5", "99999999999999999999"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}

func TestSettingsPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "svc.conf")
	os.WriteFile(file, []byte("# comment\nMEMORY_MAX=32M\nWALL_TIMEOUT_MS=1000\nPIDS_MAX=10\n"), 0o644)
	t.Setenv("WALL_TIMEOUT_MS", "2000")
	t.Setenv("PIDS_MAX", "20")
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	cs := register(fs, librarySettings)
	if err := fs.Parse([]string{"--config", file, "--pids-max", "30"}); err != nil {
		t.Fatal(err)
	}
	var cfg svc.Config
	if err := cs.apply(fs, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Limits.MemoryMax != 32<<20 || cfg.Limits.WallTimeout != 2*time.Second || cfg.Limits.PidsMax != 30 {
		t.Errorf("got memory %d wall %v pids %d", cfg.Limits.MemoryMax, cfg.Limits.WallTimeout, cfg.Limits.PidsMax)
	}
}

func TestSettingsErrorsNameTheSetting(t *testing.T) {
	for env, val := range map[string]string{
		"MEMORY_MAX": "lots", "WALL_TIMEOUT_MS": "0", "CPU_MAX": "1 2 3", "MAX_STEPS_PER_REQUEST": "-4",
		"ALLOWED_SANDBOX_PROFILES": ",",
	} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, val)
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			cs := register(fs, librarySettings)
			fs.Parse(nil)
			var cfg svc.Config
			err := cs.apply(fs, &cfg)
			if err == nil || !strings.Contains(err.Error(), env) {
				t.Fatalf("got %v, want an error naming %s", err, env)
			}
		})
	}
}
