package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/pflag"
)

// healthCmd is svc health: GET /health of a server on this host, for a
// container's HEALTHCHECK, which then needs no HTTP client in the image.
// It exits 0 when /health answers 200, 1 otherwise (503 while draining,
// no answer within the timeout, nothing listening).
func healthCmd(args []string, stdout io.Writer) error {
	fs := pflag.NewFlagSet("svc health", pflag.ContinueOnError)
	addr := fs.String("addr", "", "the server's host:port; default LISTEN_ADDR, with 127.0.0.1 for an unspecified host")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: svc health [flags]\n\nExits 0 when the server's /health answers 200.\n\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	target := *addr
	if target == "" {
		target = os.Getenv("LISTEN_ADDR")
	}
	if target == "" {
		target = "127.0.0.1:8080"
	}
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return fmt.Errorf("health: address %q: %w", target, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	url := "http://" + net.JoinHostPort(host, port) + "/health"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s answered %s: %s", url, resp.Status, body)
	}
	fmt.Fprintf(stdout, "%s", body)
	return nil
}
