package seccomp

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestParseTable(t *testing.T) {
	in := `## header one
##
## header two

# Group one,
# two lines.
read write
exit_group*

# Group two.
openat
`
	tb, err := ParseTable(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.Header) != 3 || len(tb.Groups) != 2 || len(tb.Groups[0].Comment) != 2 {
		t.Fatalf("parsed %+v", tb)
	}
	if got := tb.Syscalls(); !slices.Equal(got, []string{"exit_group", "openat", "read", "write"}) {
		t.Errorf("Syscalls() = %v", got)
	}
	if listed, hand := tb.Has("exit_group"); !listed || !hand {
		t.Errorf("exit_group: listed %v hand %v", listed, hand)
	}
	if listed, hand := tb.Has("read"); !listed || hand {
		t.Errorf("read: listed %v hand %v", listed, hand)
	}
	var b bytes.Buffer
	if err := tb.Format(&b); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(in, "read write\nexit_group*", "read write exit_group*", 1)
	if b.String() != want {
		t.Errorf("Format:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestParseTableErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"# g\nread read\n", "already listed"},
		{"# g\nread\n\n# h\nwrite read\n", "read is already listed on line 2"},
		{"read\n", "without a group comment"},
		{"# g\nRead\n", "not a system call name"},
		{"# g\nread**\n", "not a system call name"},
		{"# g\nread\n## late header\n", "header line after"},
	} {
		_, err := ParseTable(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.in, err, tc.want)
		}
	}
}

// The committed tables are in the tool's format exactly (so -write only
// changes what the traces change), every group is commented, and no table
// names a call the rules decide or the dangerous set.
func TestTables(t *testing.T) {
	ruled := Ruled()
	var killed []string
	for _, g := range Dangerous {
		if len(g.Comment) == 0 {
			t.Errorf("dangerous group %v has no comment", g.Names)
		}
		for _, n := range g.Names {
			if slices.Contains(killed, n.Syscall) {
				t.Errorf("dangerous: %s listed twice", n.Syscall)
			}
			killed = append(killed, n.Syscall)
		}
	}
	parsed := make(map[string]*Table)
	for _, name := range []string{AllowFile, RefusedFile} {
		data, err := tables.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := ParseTable(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		parsed[name] = tb
		var b bytes.Buffer
		if err := tb.Format(&b); err != nil {
			t.Fatal(err)
		}
		if b.String() != string(data) {
			t.Errorf("%s is not in the format the trace tool writes; it would write:\n%s", name, b.String())
		}
		for _, g := range tb.Groups {
			if len(g.Comment) == 0 || g.Comment[0] == "" {
				t.Errorf("%s: group %v has no comment", name, g.Names)
			}
		}
		for _, s := range tb.Syscalls() {
			if slices.Contains(ruled, s) {
				t.Errorf("%s lists %s, which the rules decide", name, s)
			}
			if slices.Contains(killed, s) {
				t.Errorf("%s lists %s, which every profile kills", name, s)
			}
		}
	}
	// What the child runs after the filter: the PATH search and its
	// failure report.
	for _, s := range []string{"execve", "write", "exit_group"} {
		if listed, _ := parsed[AllowFile].Has(s); !listed {
			t.Errorf("%s does not list %s", AllowFile, s)
		}
	}
	for _, s := range parsed[RefusedFile].Syscalls() {
		if listed, _ := parsed[AllowFile].Has(s); listed {
			t.Errorf("%s is both allowed (%s) and refused (%s)", s, AllowFile, RefusedFile)
		}
	}
	// A host-wide counter's call is refused under v2 with its reason.
	for _, g := range HostWide {
		for _, n := range g.Names {
			if listed, _ := parsed[RefusedFile].Has(n.Syscall); !listed {
				t.Errorf("%s (HostWide) is not in %s with its reason", n.Syscall, RefusedFile)
			}
		}
	}
}

// A compile task may run what it built (make check), so compile_v2 allows
// everything native_v2 does.
func TestCompileCoversNative(t *testing.T) {
	c, err := Lookup(CompileV2)
	if err != nil {
		t.Fatal(err)
	}
	n, err := Lookup(NativeV2)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range n.Allowed() {
		if !slices.Contains(c.Allowed(), s) {
			t.Errorf("native_v2 allows %s, compile_v2 does not", s)
		}
	}
}

func TestLookup(t *testing.T) {
	for _, name := range Names() {
		p, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		v2 := strings.HasSuffix(name, "_v2")
		if (p.Table != nil) != v2 || (p.Default == ENOSYS) != v2 || (p.Default == Allow) == v2 {
			t.Errorf("%s: default %v, table %v", name, p.Default, p.Table != nil)
		}
		if v2 && len(p.Allowed()) == 0 || !v2 && p.Allowed() != nil {
			t.Errorf("%s: Allowed() = %v", name, p.Allowed())
		}
		var killed, conditional []string
		for _, r := range p.Rules {
			switch {
			case r.Arg0 != nil:
				conditional = append(conditional, r.Syscall)
				// The kernel reads these arguments as 32-bit values; a
				// 64-bit pair splits every value in two (Cond).
				pair := slices.ContainsFunc(p.Rules, func(q Rule) bool {
					return q.Syscall == r.Syscall && q.Arg0 != nil && q.Arg0.Ne != r.Arg0.Ne && q.Arg0.Value == r.Arg0.Value &&
						(q.Arg0.Ne && r.Arg0.Mask == ^uint64(0) || r.Arg0.Ne && q.Arg0.Mask == ^uint64(0))
				})
				if !pair && (r.Arg0.Ne || r.Arg0.Mask>>32 != 0 || r.Arg0.Value&^r.Arg0.Mask != 0) {
					t.Errorf("%s: %s: condition %#x/%#x", name, r.Syscall, r.Arg0.Value, r.Arg0.Mask)
				}
			case r.Action == Kill:
				killed = append(killed, r.Syscall)
			}
		}
		slices.Sort(conditional)
		t.Logf("%s: default %v; %d calls allowed, %d killed, decided by argument: %v",
			name, p.Default, len(p.Allowed()), len(killed), slices.Compact(conditional))
	}
	if _, err := Lookup("compile_v3"); err == nil {
		t.Error("compile_v3: no error")
	}
}

func TestRefusesSockets(t *testing.T) {
	for name, want := range map[string]bool{CompileV2: false, CompileV1: false, NativeV2: true, NativeV1: true} {
		p, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.RefusesSockets(); got != want {
			t.Errorf("%s: RefusesSockets %v, want %v", name, got, want)
		}
	}
}
