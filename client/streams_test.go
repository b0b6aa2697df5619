package client_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/client"
	"github.com/svc-sandbox/svc/svctest"
)

// TestStreamPathsOverHTTP: a stored binary test is a task's stdin by
// stdin_path, its output goes to a file that a checker step reads in the
// sandbox, and only the verdict travels back; the output file comes back
// by outputs, byte for byte. stdin_path with stdin_from is 400
// invalid_request.
func TestStreamPathsOverHTTP(t *testing.T) {
	e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
	ctx := context.Background()
	in := bytes.Repeat([]byte{0, 1, 2, 0xff, '\n'}, 100000)
	up, err := e.c.UploadBytes(ctx, "1.in", in)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.c.Run(ctx,
		svc.Single(svc.Task{Cmd: "cat", StdinPath: "t/1.in", StdoutPath: "t/1.out", Files: map[string]svc.File{"t/1.in": {FileID: up.FileID}},
			SandboxProfile: svc.ProfileNativeV2, Outputs: []string{"t/1.out"}}),
		svc.Single(svc.Task{Cmd: "cmp", Args: []string{"t/1.in", "t/1.out"}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	run, check := resp.Results[0].Results[0], resp.Results[1].Results[0]
	if run.Outcome != svc.OutcomeExited || run.ExitCode != 0 || run.Stdout != "" {
		t.Fatalf("run: %s exit %d stdout %.40q stderr %q", run.Outcome, run.ExitCode, run.Stdout, run.Stderr)
	}
	if check.ExitCode != 0 || check.Stdout != "" {
		t.Fatalf("cmp: exit %d %q %q", check.ExitCode, check.Stdout, check.Stderr)
	}
	var got bytes.Buffer
	if _, err := e.c.DownloadOutput(ctx, run, "t/1.out", &got); err != nil || !bytes.Equal(got.Bytes(), in) {
		t.Fatalf("output: %d bytes, %v", got.Len(), err)
	}

	from := 0
	_, err = e.c.Run(ctx, svc.Parallel(svc.Task{Cmd: "true"}, svc.Task{Cmd: "cat", StdinPath: "in", StdinFrom: &from}))
	if re := wantCode(t, err, svc.CodeInvalidRequest); re == nil || re.StatusCode != 400 || !strings.Contains(err.Error(), "stdin_path") {
		t.Fatalf("stdin_path with stdin_from: %v", err)
	}
}

// TestLanguages: GET /languages lists a recipe for each toolchain /info
// lists that a recipe knows, and a C++ source built and run by its
// recipe alone greets.
func TestLanguages(t *testing.T) {
	e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
	ctx := context.Background()
	info, err := e.c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	langs, err := e.c.Languages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := svc.Languages(info.Toolchains); len(langs) != len(want) {
		t.Fatalf("%d languages for toolchains %q, want %d", len(langs), info.Toolchains, len(want))
	}
	var cpp *svc.Language
	for i, l := range langs {
		if l.Name == "cpp" {
			cpp = &langs[i]
		}
	}
	if cpp == nil {
		t.Skipf("no C++ toolchain in the image: %q", info.Toolchains)
	}
	if !strings.HasPrefix(cpp.Toolchain, "g++-") || cpp.Source != "main.cpp" || cpp.RunProfile != svc.ProfileNativeV2 {
		t.Fatalf("cpp: %+v", *cpp)
	}
	resp, err := e.c.Run(ctx,
		svc.Single(svc.Task{Cmd: cpp.Build[0], Args: cpp.Build[1:], SandboxProfile: cpp.BuildProfile,
			Files: map[string]svc.File{cpp.Source: {Content: "#include <iostream>\nint main(){std::string s; std::cin >> s; std::cout << \"Hello, \" << s << \"!\\n\";}\n"}}}),
		svc.Single(svc.Task{Cmd: cpp.Run[0], Args: cpp.Run[1:], SandboxProfile: cpp.RunProfile, Stdin: "judge"}),
	)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.Results[1].Results[0]; r.Stdout != "Hello, judge!\n" {
		t.Fatalf("run: %s exit %d %q; build stderr %q", r.Outcome, r.ExitCode, r.Stdout, resp.Results[0].Results[0].Stderr)
	}
}
