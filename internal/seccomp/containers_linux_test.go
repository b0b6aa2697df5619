package seccomp

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// containersProfile is the containers' default seccomp profile as Debian's
// golang-github-containers-common installs it: the yardstick of the v2
// allowlist.
const containersProfile = "/usr/share/containers/seccomp.json"

// containersAllowed returns the calls the profile at path allows without a
// capability on x86_64 (amd64), those allowed for some arguments only
// apart.
func containersAllowed(t *testing.T, path string) (always, conditional []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI installs golang-github-containers-common: %v", err)
		}
		t.Skipf("no containers' default profile (apt-get install golang-github-containers-common): %v", err)
	}
	var prof struct {
		Syscalls []struct {
			Names    []string `json:"names"`
			Action   string   `json:"action"`
			Args     []any    `json:"args"`
			Includes struct {
				Arches []string `json:"arches"`
				Caps   []string `json:"caps"`
			} `json:"includes"`
		} `json:"syscalls"`
	}
	if err := json.Unmarshal(b, &prof); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, s := range prof.Syscalls {
		in := s.Includes
		if s.Action != "SCMP_ACT_ALLOW" || len(in.Caps) > 0 || len(in.Arches) > 0 && !slices.Contains(in.Arches, "amd64") {
			continue
		}
		if len(s.Args) > 0 {
			conditional = append(conditional, s.Names...)
		} else {
			always = append(always, s.Names...)
		}
	}
	if len(always) < 300 {
		t.Fatalf("%s allows %d calls: not the profile this test knows", path, len(always))
	}
	return always, conditional
}

// Every call the containers' default profile allows on x86_64 is allowed
// by the v2 allowlist, killed by the dangerous set, decided by a rule, or
// refused with a written reason (refused_v2.txt). Names of other
// architectures (the 32-bit calls) do not resolve here and are counted
// apart.
func TestContainersProfile(t *testing.T) {
	always, conditional := containersAllowed(t, containersProfile)
	p, err := Lookup(CompileV2)
	if err != nil {
		t.Fatal(err)
	}
	refused, err := Refused()
	if err != nil {
		t.Fatal(err)
	}
	var killed []string
	for _, g := range Dangerous {
		for _, n := range g.Names {
			killed = append(killed, n.Syscall)
		}
	}
	counts := make(map[string]int)
	for _, name := range slices.Concat(always, conditional) {
		var class string
		switch nr, err := Resolve(name); {
		case err != nil || nr < 0:
			class = "not x86_64"
		case slices.Contains(p.Table.Syscalls(), name):
			class = "allowed"
		case slices.Contains(killed, name):
			class = "killed"
		case slices.Contains(Ruled(), name):
			class = "ruled"
		default:
			if listed, _ := refused.Has(name); listed {
				class = "refused with a reason"
			} else {
				t.Errorf("%s: the containers' default profile allows it; allow it in %s, or refuse it with the reason in %s", name, AllowFile, RefusedFile)
				continue
			}
		}
		counts[class]++
	}
	t.Logf("containers' default profile, %d calls: %v", len(always)+len(conditional), counts)
	for _, s := range refused.Syscalls() {
		if !slices.Contains(always, s) {
			t.Errorf("%s: in %s, yet the containers' default profile does not allow it: nothing to justify", s, RefusedFile)
		}
	}
}
