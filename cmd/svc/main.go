// Command svc runs untrusted programs in Linux sandboxes.
//
//	svc serve [flags]              serve the HTTP API (docs/http-api.md)
//	svc run [flags] request.json   run one request locally, print the response
//	svc prepare [flags]            prepare the Go build cache ahead, then exit
//	svc health [flags]             exit 0 when a server's /health answers 200
//	svc bench [flags]              measure what a request costs (as root)
//	svc version                    print the version and build of the binary (also --version)
//
// Every setting is an environment variable and the same as a flag in kebab
// case (MAX_CONCURRENCY, --max-concurrency); a flag wins over the
// environment, the environment over a --config file of KEY=VALUE lines.
// svc serve --help lists them all with their defaults.
//
// The request of svc run is the body of POST /execute: an envelope
// {"steps": [...]} or a bare array of steps.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/svc-sandbox/svc"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serveCmd(os.Args[2:], os.Stderr)
	case "run":
		err = runCmd(os.Args[2:], os.Stdout)
	case "prepare":
		err = prepareCmd(os.Args[2:], os.Stderr)
	case "health":
		err = healthCmd(os.Args[2:], os.Stdout)
	case "bench":
		err = benchCmd(os.Args[2:], os.Stdout, os.Stderr)
	case benchClientCmd: // svc bench's load client, not for users
		err = benchClient(os.Args[2:], os.Stdout)
	case "version", "--version":
		err = versionCmd(os.Args[2:], os.Stdout)
	case "-h", "--help", "help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "svc: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if errors.Is(err, pflag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "svc:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  svc serve [flags]              serve the HTTP API ("svc serve --help" lists the settings)
  svc run [flags] request.json   run one request locally and print the response JSON
                                 ("-" reads the request from standard input)
  svc prepare [flags]            prepare the Go build cache ahead (an image build runs it)
  svc health [flags]             exit 0 when the server's /health answers 200 (HEALTHCHECK)
  svc bench [flags]              measure what a request costs next to a bare fork+exec
                                 ("svc bench --help" lists the figures and flags)
  svc version                    print the version, Go version and commit of the binary
                                 (also "svc --version")
`)
}

func runCmd(args []string, stdout io.Writer) error {
	fs := pflag.NewFlagSet("svc run", pflag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: svc run [flags] request.json\n\n%s", fs.FlagUsages())
	}
	settings := register(fs, librarySettings)
	verbose := fs.Bool("verbose", false, "log to standard error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var o options
	if err := settings.apply(fs, &o); err != nil {
		return err
	}
	cfg := o.Config
	if fs.NArg() != 1 {
		return fmt.Errorf("run: want one request file, got %d arguments", fs.NArg())
	}
	var in io.Reader = os.Stdin
	if name := fs.Arg(0); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	req, err := svc.DecodeRequest(in)
	if err != nil {
		return err
	}
	if *verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	sb, err := newRunSandbox(cfg)
	if err != nil {
		return err
	}
	defer sb.Close(context.Background())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	resp, err := sb.Run(ctx, req)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(resp)
}

// runAside says what svc run, which holds a state dir and a range of
// host ids while it runs, needs beside a running svc serve: both of its
// own, since the defaults are the server's.
const runAside = "svc run beside a running svc serve needs a state dir and a range of host ids of its own: " +
	"pass --state-dir (STATE_DIR) with another directory, e.g. --state-dir \"$(mktemp -d)\", " +
	"and --sandbox-uid-base (SANDBOX_UID_BASE) with a range the server does not use"

// newRunSandbox is svc.New for svc run, whose errors for a state dir or
// host ids in use by another instance say how to run beside it.
func newRunSandbox(cfg svc.Config) (*svc.Sandbox, error) {
	if dir, err := filepath.Abs(cfg.StateDir); err == nil {
		if err := stateDirFree(dir); err != nil {
			return nil, fmt.Errorf("run: state dir %s is in use by another svc instance; %s", dir, runAside)
		}
	}
	sb, err := svc.New(cfg)
	if errors.Is(err, svc.ErrHostIDsInUse) {
		return nil, fmt.Errorf("run: %w; %s", err, runAside)
	}
	return sb, err
}
