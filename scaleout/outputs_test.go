package scaleout

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/client"
)

// outputRequest is a one-step cacheable request whose task writes
// out.txt with tag and collects it; it returns the file's content too.
func outputRequest(tag string) (*svc.Request, string) {
	want := "output of " + tag + "\n"
	return &svc.Request{Cache: true, Steps: []svc.Step{svc.Single(svc.Task{
		Cmd: "sh", Args: []string{"-c", `printf '%s\n' "$1" > out.txt`, "sh", "output of " + tag},
		Outputs: []string{"out.txt"},
	})}}, want
}

// executeWithAffinity sends req through nginx under the affinity aff and
// downloads its output out.txt under it too; it returns the response, the
// instance that ran it and the one that served the download.
func (cl *cluster) executeWithAffinity(t *testing.T, req *svc.Request, aff, want string) (*svc.Response, *instance, *instance) {
	t.Helper()
	c := client.WithAffinity(ctx(t, 90*time.Second), aff)
	m := cl.rec.mark()
	resp, err := cl.c.Execute(c, req)
	as := cl.rec.since(m)
	if err != nil {
		t.Fatalf("execute through nginx: %v\nattempts:\n%s", err, dump(as))
	}
	ran := cl.answeredBy(t, as[len(as)-1])
	r := resp.Results[0].Results[0]
	if r.Outcome != svc.OutcomeExited || r.ExitCode != 0 {
		t.Fatalf("%s: %s, exit code %d, stderr %q", ran.name, r.Outcome, r.ExitCode, r.Stderr)
	}
	m = cl.rec.mark()
	var buf bytes.Buffer
	_, err = cl.c.DownloadOutput(c, r, "out.txt", &buf)
	as = cl.rec.since(m)
	if err != nil || buf.String() != want {
		t.Fatalf("download the output of a request %s ran: %q, %v; want %q\nattempts:\n%s", ran.name, buf.String(), err, want, dump(as))
	}
	return resp, ran, cl.answeredBy(t, as[len(as)-1])
}

// testOutputsAcrossInstances: a step with outputs that one instance ran
// and stored is replayed by another, whose answer has the same outputs;
// that instance stores the files again from the workspace the replay
// left, so its answer's file ids download from it. The request and the
// download of its output carry one X-Svc-Affinity, so nginx sends both
// to the instance that ran the request.
func testOutputsAcrossInstances(t *testing.T, cl *cluster) {
	req, want := outputRequest("outputs-" + randomHex(4))
	first, x, dx := cl.executeWithAffinity(t, req, "outputs-"+randomHex(8), want)
	checkCache(t, first, 0, 1, x)
	if dx != x {
		t.Fatalf("the request ran on %s, its download went to %s", x.name, dx.name)
	}
	id := first.Results[0].Results[0].Outputs["out.txt"].FileID
	for _, in := range cl.live() {
		if has := hasFile(t, in, id); has != (in == x) {
			t.Fatalf("after %s ran the request, %s lists its output: %v", x.name, in.name, has)
		}
	}

	var y *instance
	for range 4 * len(cl.instances) {
		resp, in, din := cl.executeWithAffinity(t, req, "outputs-"+randomHex(8), want)
		checkCache(t, resp, 1, 0, in)
		if din != in {
			t.Fatalf("the request was replayed by %s, its download went to %s", in.name, din.name)
		}
		r, o := resp.Results[0].Results[0], first.Results[0].Results[0]
		if !r.Replayed || !reflect.DeepEqual(r.Outputs, o.Outputs) {
			t.Fatalf("replayed by %s: replayed %v, outputs %v; want the run's %v", in.name, r.Replayed, r.Outputs, o.Outputs)
		}
		if in != x {
			y = in
			break
		}
	}
	if y == nil {
		t.Fatalf("nginx sent every request to %s", x.name)
	}
	if !hasFile(t, y, id) {
		t.Errorf("%s replayed the step and does not list its output", y.name)
	}
	t.Logf("stored by %s, replayed by %s, whose store has the output too", x.name, y.name)
}
