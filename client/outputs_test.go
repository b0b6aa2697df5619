package client_test

import (
	"bytes"
	"context"
	"io"
	"slices"
	"testing"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/client"
	"github.com/svc-sandbox/svc/svctest"
)

// TestDownloadOutput: a request with outputs and the downloads of its
// outputs, under one WithAffinity context, all carry its value; the bytes
// are the task's, an error entry is not_found, an unknown path
// invalid_request.
func TestDownloadOutput(t *testing.T) {
	e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
	ctx := client.WithAffinity(context.Background(), "outputs-1")
	resp, err := e.c.Execute(ctx, &svc.Request{Steps: []svc.Step{svc.Single(svc.Task{
		Cmd: "sh", Args: []string{"-c", "printf 'out\\000put' > out.bin; ln -s /etc/passwd link"},
		Outputs: []string{"out.bin", "link", "missing"},
	})}})
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Results[0].Results[0]
	var buf bytes.Buffer
	for _, p := range []string{"out.bin", "./out.bin"} {
		buf.Reset()
		if n, err := e.c.DownloadOutput(ctx, r, p, &buf); err != nil || n != 7 || buf.String() != "out\x00put" {
			t.Errorf("DownloadOutput %s: %d %q %v", p, n, buf.String(), err)
		}
	}
	_, err = e.c.DownloadOutput(ctx, r, "link", io.Discard)
	wantCode(t, err, svc.CodeNotFound)
	_, err = e.c.DownloadOutput(ctx, r, "missing", io.Discard)
	wantCode(t, err, svc.CodeNotFound)
	_, err = e.c.DownloadOutput(ctx, r, "other", io.Discard)
	wantCode(t, err, svc.CodeInvalidRequest)

	id := r.Outputs["out.bin"].FileID
	for _, key := range []string{"POST /execute", "GET /file/" + id} {
		if a := e.p.affinities(key); len(a) == 0 || slices.ContainsFunc(a, func(v string) bool { return v != "outputs-1" }) {
			t.Errorf("%s: X-Svc-Affinity %q, want outputs-1 on each", key, a)
		}
	}
	// Without one, nothing carries the header.
	if _, err := e.c.Download(context.Background(), id, io.Discard); err != nil {
		t.Fatal(err)
	}
	if a := e.p.affinities("GET /file/" + id); a[len(a)-1] != "" {
		t.Errorf("a download without WithAffinity carries %q", a[len(a)-1])
	}
}

// TestReuploadKeepsCallersAffinity: the uploads again and the request
// again of a recovery from file_not_found carry the caller's affinity,
// not a fresh one, so the downloads of its outputs follow them.
func TestReuploadKeepsCallersAffinity(t *testing.T) {
	e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
	bg := context.Background()
	up, err := e.c.UploadBytes(bg, "in.txt", []byte("input\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.s.Files.Delete(up.FileID); err != nil {
		t.Fatal(err)
	}
	ctx := client.WithAffinity(bg, "outputs-2")
	resp, err := e.c.Execute(ctx, &svc.Request{Steps: []svc.Step{svc.Single(svc.Task{
		Cmd: "cp", Args: []string{"in.txt", "out.txt"}, Files: map[string]svc.File{"in.txt": {FileID: up.FileID}},
		Outputs: []string{"out.txt"},
	})}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Results[0].Results[0].Outputs["out.txt"].FileID; got != up.FileID {
		t.Errorf("output %s, want the input's id %s", got, up.FileID)
	}
	ex, fi := e.p.affinities("POST /execute"), e.p.affinities("POST /file")
	if !slices.Equal(ex, []string{"outputs-2", "outputs-2"}) || !slices.Equal(fi[1:], []string{"outputs-2"}) {
		t.Errorf("X-Svc-Affinity of the executes %q, of the uploads %q; want outputs-2 on the executes and the upload again", ex, fi)
	}
}
