package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/svc-sandbox/svc"
)

const prepareUsage = `usage: svc prepare [flags]

Prepares ahead what svc serve would otherwise prepare in the background
after it starts, then exits: today the Go standard library's build cache
(GO_BUILD_CACHE_DIR), built in a sandbox by the image's own Go toolchain.
An image build runs it so that the first go build in a fresh container is
warm. It takes the settings of svc serve (the same environment); with no
Go toolchain in ROOTFS or GO_BUILD_CACHE_DIR=off it says so and exits 1.

`

// prepareCmd is svc prepare: a Sandbox with serve's settings, which starts
// preparing the Go build cache at once, waited for.
func prepareCmd(args []string, stderr io.Writer) error {
	fs := pflag.NewFlagSet("svc prepare", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Usage = func() { fmt.Fprint(stderr, prepareUsage+fs.FlagUsages()) }
	settings := register(fs, allSettings)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("prepare: unexpected arguments %q", fs.Args())
	}
	var o options
	if err := settings.apply(fs, &o); err != nil {
		return err
	}
	stateDir, err := filepath.Abs(o.StateDir)
	if err != nil {
		return fmt.Errorf("setting STATE_DIR: %w", err)
	}
	imageID, _, err := o.image()
	if err != nil {
		return err
	}
	o.GoBuildCache, o.ImageID = o.goBuildCacheDir(stateDir), imageID
	if o.GoBuildCache == "" {
		return errors.New("prepare: GO_BUILD_CACHE_DIR is off: nothing to prepare")
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	o.Logger = log
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	sb, err := svc.New(o.Config)
	if err != nil {
		return err
	}
	defer sb.Close(context.Background())
	if err := sb.WaitGoBuildCache(ctx); err != nil {
		return fmt.Errorf("prepare: Go build cache in %s: %w", o.GoBuildCache, err)
	}
	log.Info("prepared", "go_build_cache_dir", o.GoBuildCache, "image_id", imageID,
		"wall_ms", time.Since(start).Milliseconds())
	return nil
}
