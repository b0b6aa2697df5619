package seccomp

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
)

// A Table is an allowlist as its file holds it: a header, then groups of
// system calls, each with a comment saying what the group is for.
//
// The file format, line by line:
//
//	## text      header (only before the first group)
//	# text       the comment of a group (starts a new group after names)
//	name name*   system calls of the current group; a trailing * marks a
//	             call allowed by hand, not seen in the traces
//	(blank)      ends the current group
//
// The trace tool (./trace) checks a table against the traced set and
// rewrites it; the comments and the grouping are kept. The zero value is an
// empty table; a Table is safe for concurrent reads.
type Table struct {
	Header []string
	Groups []Group
}

// Group is a commented group of system calls.
type Group struct {
	Comment []string
	Names   []Name
}

// Name is a system call of a table. Hand is true for a call allowed by
// hand rather than measured (the tool does not drop it when the traces no
// longer show it).
type Name struct {
	Syscall string
	Hand    bool
}

// ParseTable reads a table. Names must be unique and well formed.
func ParseTable(r io.Reader) (*Table, error) {
	t := &Table{}
	seen := make(map[string]int)
	var cur *Group
	sc := bufio.NewScanner(r)
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			cur = nil
		case strings.HasPrefix(line, "##"):
			if len(t.Groups) > 0 {
				return nil, fmt.Errorf("line %d: header line after the first group", ln)
			}
			t.Header = append(t.Header, strings.TrimSpace(strings.TrimPrefix(line, "##")))
		case strings.HasPrefix(line, "#"):
			if cur == nil || len(cur.Names) > 0 {
				t.Groups = append(t.Groups, Group{})
				cur = &t.Groups[len(t.Groups)-1]
			}
			cur.Comment = append(cur.Comment, strings.TrimSpace(strings.TrimPrefix(line, "#")))
		default:
			if cur == nil {
				return nil, fmt.Errorf("line %d: system calls without a group comment", ln)
			}
			for _, f := range strings.Fields(line) {
				n := Name{Syscall: strings.TrimSuffix(f, "*"), Hand: strings.HasSuffix(f, "*")}
				if !validName(n.Syscall) {
					return nil, fmt.Errorf("line %d: %q is not a system call name", ln, f)
				}
				if prev, ok := seen[n.Syscall]; ok {
					return nil, fmt.Errorf("line %d: %s is already listed on line %d", ln, n.Syscall, prev)
				}
				seen[n.Syscall] = ln
				cur.Names = append(cur.Names, n)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	t.Groups = slices.DeleteFunc(t.Groups, func(g Group) bool { return len(g.Names) == 0 })
	return t, nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// Syscalls returns the names of the table, sorted.
func (t *Table) Syscalls() []string {
	var s []string
	for _, g := range t.Groups {
		for _, n := range g.Names {
			s = append(s, n.Syscall)
		}
	}
	slices.Sort(s)
	return s
}

// Has reports whether the table lists the call, and whether by hand.
func (t *Table) Has(syscall string) (listed, hand bool) {
	for _, g := range t.Groups {
		for _, n := range g.Names {
			if n.Syscall == syscall {
				return true, n.Hand
			}
		}
	}
	return false, false
}

// Format writes the table in its file format, names wrapped at 76 columns.
func (t *Table) Format(w io.Writer) error {
	var b strings.Builder
	for _, h := range t.Header {
		b.WriteString(strings.TrimRight("## "+h, " ") + "\n")
	}
	for _, g := range t.Groups {
		if len(g.Names) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		for _, c := range g.Comment {
			b.WriteString(strings.TrimRight("# "+c, " ") + "\n")
		}
		col := 0
		for _, n := range g.Names {
			s := n.Syscall
			if n.Hand {
				s += "*"
			}
			switch {
			case col == 0:
			case col+1+len(s) > 76:
				b.WriteString("\n")
				col = 0
			default:
				b.WriteString(" ")
				col++
			}
			b.WriteString(s)
			col += len(s)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
