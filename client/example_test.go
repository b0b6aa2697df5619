package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/client"
)

// Compile a C source on a server and run it, the source uploaded once and
// referred to by its file id. (Compile-only, with no Output comment: go
// test would run it, and it needs a server; TestEndpoints makes the same
// calls against a real one.)
func ExampleClient_Execute() {
	c, err := client.New(client.Config{URL: "http://127.0.0.1:8080", Key: os.Getenv("SVC_KEY")})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	src := []byte("#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n")
	up, err := c.UploadBytes(ctx, "hi.c", src) // remembered: uploaded again should the server lose it
	if err != nil {
		log.Fatal(err)
	}
	resp, err := c.Execute(ctx, &svc.Request{Steps: []svc.Step{
		svc.Single(svc.Task{Cmd: "gcc", Args: []string{"-o", "hi", "hi.c"},
			Files: map[string]svc.File{"hi.c": {FileID: up.FileID}}}),
		svc.Single(svc.Task{Cmd: "./hi", SandboxProfile: svc.ProfileNativeV2}),
	}, StopOnFailure: true})
	var re *client.ResponseError
	switch {
	case errors.Is(err, svc.ErrLimitsExceeded):
		log.Fatal("the request is over the server's limits: ", err)
	case errors.As(err, &re):
		log.Fatalf("refused (HTTP %d, request id %s): %v", re.StatusCode, re.RequestID, err)
	case err != nil:
		log.Fatal(err)
	}
	fmt.Print(resp.Results[1].Results[0].Stdout)
}

// A client for a busy server: more retries of 503s and dropped
// connections, longer waits allowed. New checks the URL and makes no
// request (a trailing slash is dropped), so this example runs.
func ExampleRetryPolicy() {
	c, err := client.New(client.Config{
		URL: "https://svc.example.com/api/v1/",
		Key: os.Getenv("SVC_KEY"),
		Retry: client.RetryPolicy{
			MaxRetries: 6,
			MinDelay:   500 * time.Millisecond,
			MaxDelay:   30 * time.Second,
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.URL())
	// Output: https://svc.example.com/api/v1
}
