// Command client talks to a running svc server through the Go client
// (package client): it uploads a C source, compiles and runs it on the
// server in one request, and deletes the source again.
//
//	go run ./cmd/svc serve                          # logs the generated API key
//	go run ./examples/client -key <that key>
//
// -url (or SVC_URL) is the server's base URL, default
// http://127.0.0.1:8080; -key (or SVC_KEY) its API key. Busy servers and
// dropped connections are retried as the specification's client retry
// policy says; a file the server lost is uploaded again.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/client"
)

const src = `#include <stdio.h>
int main(void) { puts("hello from the sandbox"); return 0; }
`

func main() {
	url := flag.String("url", cmp.Or(os.Getenv("SVC_URL"), "http://127.0.0.1:8080"), "base URL of the svc server (SVC_URL)")
	key := flag.String("key", os.Getenv("SVC_KEY"), "API key of the server (SVC_KEY)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, *url, *key); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, url, key string) error {
	c, err := client.New(client.Config{URL: url, Key: key})
	if err != nil {
		return err
	}
	info, err := c.Info(ctx)
	if errors.Is(err, svc.ErrUnauthorized) {
		return fmt.Errorf("%w (give the server's API key with -key or SVC_KEY)", err)
	}
	if err != nil {
		return err
	}
	profiles := fmt.Sprint(info.AllowedProfiles)
	fmt.Fprintf(w, "server at %s: sandbox profiles %s, %d MiB per task\n",
		url, strings.Trim(profiles, "[]"), info.Limits.MemoryMax/svc.MiB)

	// UploadBytes remembers the bytes: should the server lose the file
	// before the request (expiry, another instance behind a load
	// balancer), Execute uploads it again and retries.
	up, err := c.UploadBytes(ctx, "hello.c", []byte(src))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "uploaded hello.c: file_id %s..., %d bytes\n", up.FileID[:16], up.Size)

	resp, err := c.Execute(ctx, &svc.Request{Steps: []svc.Step{
		svc.Single(svc.Task{Cmd: "gcc", Args: []string{"-O2", "-o", "hello", "hello.c"},
			Files: map[string]svc.File{"hello.c": {FileID: up.FileID}}}),
		svc.Single(svc.Task{Cmd: "./hello", SandboxProfile: svc.ProfileNativeV2}),
	}, StopOnFailure: true})
	if err != nil {
		// The server refused the request or could not run it: an
		// *svc.Error with a Code, whose cause (a *client.ResponseError)
		// has the HTTP status and the x-request-id.
		return fmt.Errorf("execute (%s): %w", svc.CodeOf(err), err)
	}
	for i, name := range []string{"gcc", "./hello"} {
		r := resp.Results[i].Results[0]
		fmt.Fprintf(w, "%-8s %s, exit code %d, %d ms\n", name, r.Outcome, r.ExitCode, r.Stats.WallTimeMs)
	}
	fmt.Fprintf(w, "stdout: %q\n", resp.Results[1].Results[0].Stdout)

	if err := c.Delete(ctx, up.FileID); err != nil {
		return err
	}
	fmt.Fprintln(w, "deleted hello.c")
	return nil
}
