package svctest_test

import (
	"context"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/client"
	"github.com/svc-sandbox/svc/svctest"
)

// A judge's test: a C++ solution on its cases under the problem's limits
// (1 s of CPU time, 64 MiB), one build under the sandbox's, the runs in
// parallel, outputs compared token by token. (Compile-only: it needs
// root, and a test's *testing.T, which an example has not; go test would
// run an example with an Output comment and could not skip it.)
func ExampleJudge() {
	var t *testing.T // the test's
	src := "#include <iostream>\nint main() { long long a, b; std::cin >> a >> b; std::cout << a + b << '\\n'; }\n"
	sb := svctest.New(t, svc.Config{}) // the default limits: 5 s of CPU time, 256 MiB
	p := svctest.CPP(src)
	p.RunLimits = svc.TaskLimits{CPUTimeLimit: time.Second, MemoryMax: 64 * svc.MiB}
	cases := []svctest.Case{
		{Name: "small", Input: "1 2\n", Want: "3\n"},
		{Name: "big", Input: "2000000000 2000000000\n", Want: "4000000000\n"},
	}
	rep, err := svctest.Judge(context.Background(), sb, p, cases, svctest.Tokens)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.String())
	if !rep.Accepted() {
		t.Errorf("verdicts %q", rep.Verdicts())
	}
}

// A test against a real server on loopback, through the Go client.
// (Compile-only: it needs root, and a test's *testing.T; the package's
// tests run servers this way.)
func ExampleServer_NewClient() {
	var t *testing.T // the test's
	s := svctest.NewServer(t, svctest.Config{})
	c := s.NewClient(client.Config{}) // the server's URL and key
	resp, err := c.Run(context.Background(), svc.Single(svc.Task{Cmd: "echo", Args: []string{"hi"}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Results[0].Results[0].Stdout; got != "hi\n" {
		t.Errorf("stdout %q", got)
	}
}
