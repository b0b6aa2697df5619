package openapiclient_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-sandbox/svc/internal/apicheck"
	oc "github.com/svc-sandbox/svc/internal/openapiclient"
	"github.com/svc-sandbox/svc/svctest"
)

// TestGeneratedIsCurrent: client.gen.go is what oapi-codegen (the version
// go.mod names, run as go tool) makes of today's openapi.yaml.
func TestGeneratedIsCurrent(t *testing.T) {
	// The settings of go generate, but for the output file.
	cfg, err := os.ReadFile("oapi-codegen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "client.gen.go")
	cfg = []byte(strings.Replace(string(cfg), "\noutput: client.gen.go\n", "\noutput: "+out+"\n", 1))
	if err := os.WriteFile(filepath.Join(dir, "oapi-codegen.yaml"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "tool", "oapi-codegen", "-config", filepath.Join(dir, "oapi-codegen.yaml"), "../../openapi.yaml")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd, err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("client.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, have) {
		t.Fatal("client.gen.go is not what oapi-codegen makes of openapi.yaml: run go generate ./internal/openapiclient")
	}
}

// TestGeneratedClient runs the generated client against a real server,
// every operation once and a compile-and-run request (gcc, then the
// program under native_v2), its traffic checked against openapi.yaml.
func TestGeneratedClient(t *testing.T) {
	s := svctest.NewServer(t, svctest.Config{})
	apicheck.Wrap(t, s.Client)
	key := func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+s.Key)
		return nil
	}
	c, err := oc.NewClientWithResponses(s.URL, oc.WithHTTPClient(s.Client), oc.WithRequestEditorFn(key))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sent := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	health, err := c.GetHealthWithResponse(ctx, nil)
	sent("health", err)
	if health.StatusCode() != 200 || health.JSON200.Status != oc.Ok {
		t.Fatalf("health: %s %s", health.Status(), health.Body)
	}
	info, err := c.GetInfoWithResponse(ctx, nil)
	sent("info", err)
	if info.StatusCode() != 200 {
		t.Fatalf("info: %s %s", info.Status(), info.Body)
	}
	if in := info.JSON200; in.Limits.MaxConcurrency != s.Sandbox.Limits().MaxConcurrency || in.SandboxProfiles.Default != oc.CompileV2 {
		t.Errorf("info %+v", in)
	}
	langs, err := c.GetLanguagesWithResponse(ctx, nil)
	sent("languages", err)
	if langs.StatusCode() != 200 || langs.JSON200 == nil {
		t.Fatalf("languages: %s %s", langs.Status(), langs.Body)
	}

	// Upload: a multipart body, as the generated client takes it.
	content := []byte("stored through the generated client\n")
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "in.txt")
	fw.Write(content)
	mw.Close()
	up, err := c.UploadFileWithBodyWithResponse(ctx, nil, mw.FormDataContentType(), &form)
	sent("upload", err)
	sum := sha256.Sum256(content)
	id := hex.EncodeToString(sum[:])
	if up.StatusCode() != 201 || up.JSON201.FileId != id || up.JSON201.Size != int64(len(content)) {
		t.Fatalf("upload: %s %s", up.Status(), up.Body)
	}
	list, err := c.ListFilesWithResponse(ctx, nil)
	sent("list", err)
	if list.StatusCode() != 200 || len(list.JSON200.Files) != 1 || list.JSON200.Files[0].Id != id {
		t.Errorf("list: %s %s", list.Status(), list.Body)
	}
	down, err := c.DownloadFileWithResponse(ctx, id, nil)
	sent("download", err)
	if down.StatusCode() != 200 || !bytes.Equal(down.Body, content) {
		t.Errorf("download: %s %q", down.Status(), down.Body)
	}

	// Execute: a task reading the stored file, then a parallel step with
	// a failing task, in an envelope that stops on failure: the third
	// step does not run.
	var file oc.FileContent
	file.FromFileRef(oc.FileRef{FileId: id})
	var first, second, third oc.Step
	first.FromTask(oc.Task{Cmd: "cat", Args: &[]string{"in.txt"}, Files: &map[string]oc.FileContent{"in.txt": file}})
	second.FromParallelStep(oc.ParallelStep{{Cmd: "echo", Args: &[]string{"a"}}, {Cmd: "false"}})
	third.FromTask(oc.Task{Cmd: "true"})
	stop := true
	var req oc.ExecuteBody
	if err := req.FromExecuteRequest(oc.ExecuteRequest{Steps: oc.StepList{first, second, third}, StopOnFailure: &stop}); err != nil {
		t.Fatal(err)
	}
	ex, err := c.ExecuteStepsWithResponse(ctx, nil, req)
	sent("execute", err)
	if ex.StatusCode() != 200 {
		t.Fatalf("execute: %s %s", ex.Status(), ex.Body)
	}
	resp, err := ex.JSON200.AsExecuteResponse()
	if err != nil || len(resp.Results) != 3 {
		t.Fatalf("execute response: %v %s", err, ex.Body)
	}
	one, _ := resp.Results[0].AsTaskResult()
	if r, err := one.ValueByDiscriminator(); err != nil || r.(oc.CompletedResult).Stdout != string(content) {
		t.Errorf("step 1: %v %+v", err, r)
	}
	two, err := resp.Results[1].AsStepResult1()
	if err != nil || len(two) != 2 {
		t.Fatalf("step 2: %v %s", err, ex.Body)
	}
	if r, err := two[1].ValueByDiscriminator(); err != nil || r.(oc.CompletedResult).ExitCode != 1 {
		t.Errorf("step 2, task 2: %v %+v", err, r)
	}
	three, _ := resp.Results[2].AsTaskResult()
	if r, err := three.ValueByDiscriminator(); err != nil || r.(oc.NotRunResult).Outcome != oc.NotStarted {
		t.Errorf("step 3: %v %+v", err, r)
	}

	// Compile and run: gcc in one step, the program in the next under
	// native_v2, sharing the workspace.
	var src oc.FileContent
	if err := src.FromFileContent0("#include <stdio.h>\nint main(void) { puts(\"compiled and run\"); return 0; }\n"); err != nil {
		t.Fatal(err)
	}
	native := oc.NativeV2
	var compile, run oc.Step
	compile.FromTask(oc.Task{Cmd: "gcc", Args: &[]string{"-O2", "-o", "hello", "hello.c"}, Files: &map[string]oc.FileContent{"hello.c": src}})
	run.FromTask(oc.Task{Cmd: "./hello", SandboxProfile: &native})
	var cr oc.ExecuteBody
	if err := cr.FromExecuteRequest(oc.ExecuteRequest{Steps: oc.StepList{compile, run}, StopOnFailure: &stop}); err != nil {
		t.Fatal(err)
	}
	ex, err = c.ExecuteStepsWithResponse(ctx, nil, cr)
	sent("compile and run", err)
	if ex.StatusCode() != 200 {
		t.Fatalf("compile and run: %s %s", ex.Status(), ex.Body)
	}
	if resp, err = ex.JSON200.AsExecuteResponse(); err != nil || len(resp.Results) != 2 {
		t.Fatalf("compile and run: %v %s", err, ex.Body)
	}
	ran, _ := resp.Results[1].AsTaskResult()
	if r, err := ran.ValueByDiscriminator(); err != nil || r.(oc.CompletedResult).Stdout != "compiled and run\n" {
		t.Errorf("compile and run: %v %s", err, ex.Body)
	}

	m, err := c.GetMetricsWithResponse(ctx, nil)
	sent("metrics", err)
	if m.StatusCode() != 200 || !strings.Contains(string(m.Body), "svc_execution_slots_in_use ") {
		t.Errorf("metrics: %s %s", m.Status(), m.Body)
	}
	doc, err := c.GetOpenAPIWithResponse(ctx, nil)
	sent("openapi.json", err)
	if doc.StatusCode() != 200 || (*doc.JSON200)["openapi"] != "3.1.0" {
		t.Errorf("openapi.json: %s %.100s", doc.Status(), doc.Body)
	}

	// Errors come back typed, with their codes.
	drop, err := c.DropCacheWithResponse(ctx, nil)
	sent("drop cache", err)
	if drop.JSON409 == nil || drop.JSON409.Code != "cache_disabled" {
		t.Errorf("drop cache: %s %s", drop.Status(), drop.Body)
	}
	del, err := c.DeleteFileWithResponse(ctx, id, nil)
	sent("delete", err)
	if del.StatusCode() != 204 {
		t.Errorf("delete: %s %s", del.Status(), del.Body)
	}
	gone, err := c.DownloadFileWithResponse(ctx, id, nil)
	sent("download a deleted file", err)
	if gone.JSON404 == nil || gone.JSON404.Code != "not_found" {
		t.Errorf("download a deleted file: %s %s", gone.Status(), gone.Body)
	}
	nokey, err := oc.NewClientWithResponses(s.URL, oc.WithHTTPClient(s.Client))
	if err != nil {
		t.Fatal(err)
	}
	unauth, err := nokey.GetInfoWithResponse(apicheck.Malformed(ctx), nil) // no key: not what the document asks
	sent("info without a key", err)
	if unauth.JSON401 == nil || unauth.JSON401.Code != "unauthorized" || unauth.HTTPResponse.Header.Get("WWW-Authenticate") != "Bearer" {
		t.Errorf("info without a key: %s %s", unauth.Status(), unauth.Body)
	}
}
