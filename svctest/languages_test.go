package svctest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/svctest"
)

// A language is a judge language with its hello world, which greets the
// name on its standard input.
type language struct {
	name    string
	program svctest.Program
	// tools are the commands the language needs on the task PATH.
	tools []string
}

func languages() []language {
	return []language{
		{"c", svctest.C(`#include <stdio.h>
int main(void) { char s[64]; if (scanf("%63s", s) != 1) return 1; printf("Hello, %s!\n", s); return 0; }
`), []string{"gcc"}},
		{"cpp", svctest.CPP(`#include <iostream>
#include <string>
int main() { std::string s; std::cin >> s; std::cout << "Hello, " << s << "!\n"; }
`), []string{"g++"}},
		{"python", svctest.Python("print(f\"Hello, {input().strip()}!\")\n"), []string{"python3"}},
		{"pypy", svctest.PyPy("print(\"Hello, %s!\" % input().strip())\n"), []string{"pypy3"}},
		{"go", svctest.Go(`package main

import "fmt"

func main() {
	var s string
	fmt.Scan(&s)
	fmt.Printf("Hello, %s!\n", s)
}
`), []string{"/usr/local/go/bin/go"}},
		{"java", svctest.Java(`import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        System.out.println("Hello, " + new Scanner(System.in).next() + "!");
    }
}
`), []string{"javac", "java"}},
		{"rust", svctest.Rust(`use std::io::Read;

fn main() {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).unwrap();
    println!("Hello, {}!", s.trim());
}
`), []string{"rustc", "cc"}},
		{"js", svctest.JS(`const s = require("fs").readFileSync(0, "utf8").trim();
console.log(` + "`Hello, ${s}!`" + `);
`), []string{"node"}},
	}
}

// requireTools skips the test, saying which, when a command is not on the
// task PATH of this machine (the sandbox's root filesystem); under CI=true,
// which installs every language (.ci/run), it fails instead.
func requireTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if !onTaskPath(tool) {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed (CI installs it: .ci/run)", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
}

// onTaskPath reports whether command is an executable file in a directory
// of the task PATH.
func onTaskPath(command string) bool { return taskLookPath(command) != "" }

// taskLookPath returns the executable file that command is in a directory
// of the task PATH, "" when there is none. An absolute command is a file
// the sandbox links onto the PATH (Go's /usr/local/go/bin/go).
func taskLookPath(command string) string {
	dirs := []string{"/usr/local/bin", "/usr/bin", "/bin"}
	if filepath.IsAbs(command) {
		dirs, command = []string{filepath.Dir(command)}, filepath.Base(command)
	}
	// The sandbox finds Go's commands in /usr/local/bin.
	if command == "go" || command == "gofmt" {
		dirs = append(dirs, "/usr/local/go/bin")
	}
	for _, dir := range dirs {
		p := filepath.Join(dir, command)
		fi, err := os.Stat(p)
		if err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// TestLanguages judges each language's hello world in a sandbox with a
// judge's limits (128 MiB, 2 s of CPU) raised to what the language needs
// (Program.Limits): the build under compile_v2, the runs under the
// program's profile.
func TestLanguages(t *testing.T) {
	for _, l := range languages() {
		t.Run(l.name, func(t *testing.T) {
			requireTools(t, l.tools...)
			lim := l.program.Limits(svc.Limits{MemoryMax: 128 * svc.MiB, CPUTimeLimit: 2 * time.Second, WallTimeout: 10 * time.Second})
			cfg := svc.Config{Limits: lim}
			if l.name == "go" {
				// Go's build with the standard library prepared, as
				// the server has it.
				cfg.GoBuildCache = svctest.GoBuildCache()
			}
			sb := svctest.New(t, cfg)
			if cfg.GoBuildCache != "" {
				if err := sb.WaitGoBuildCache(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			cases := []svctest.Case{{Input: "world\n", Want: "Hello, world!\n"}, {Input: "svc", Want: "Hello, svc!\n"}}
			rep, err := svctest.Judge(context.Background(), sb, l.program, cases, svctest.Exact)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("limits %+v\n%s", lim, rep)
			if !rep.Accepted() {
				for _, c := range rep.Cases {
					t.Errorf("case %s: %s: %s, stdout %q, stderr %q", c.Name, c.Verdict, c.Result.Outcome, c.Result.Stdout, trim(c.Result.Stderr))
				}
			}
		})
	}
}

// TestProgramLimits raises limits to a program's needs without a sandbox.
func TestProgramLimits(t *testing.T) {
	d := svc.DefaultLimits()
	p := svctest.Program{
		BuildNeeds: svc.Limits{MemoryMax: 512 * svc.MiB, PidsMax: 32, WallTimeout: 90 * time.Second},
		RunNeeds:   svc.Limits{MemoryMax: 300 * svc.MiB, PidsMax: 100, CPUTimeLimit: time.Second},
	}
	got := p.Limits(svc.Limits{MemoryMax: 64 * svc.MiB, CPUTimeLimit: 2 * time.Second})
	want := svc.Limits{MemoryMax: 512 * svc.MiB, PidsMax: 100, CPUTimeLimit: 2 * time.Second,
		WallTimeout: 90 * time.Second, OverallTimeout: 90 * time.Second}
	if got != want {
		t.Errorf("Limits:\n got %+v\nwant %+v", got, want)
	}
	// Defaults that are enough stay zero (defaults); a need the default
	// meets changes nothing.
	small := svctest.Program{BuildNeeds: svc.Limits{MemoryMax: d.MemoryMax / 2, PidsMax: d.PidsMax}}
	if got := small.Limits(svc.Limits{}); got != (svc.Limits{}) {
		t.Errorf("Limits of small needs: %+v, want zero", got)
	}
	if got := (svctest.Program{}).Limits(svc.Limits{PidsMax: 7}); got != (svc.Limits{PidsMax: 7}) {
		t.Errorf("Limits without needs: %+v", got)
	}
}

// trim shortens s for a message.
func trim(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return strings.TrimSpace(s)
}
