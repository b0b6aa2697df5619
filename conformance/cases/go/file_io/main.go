// Command prog works with files in its working directory.
package main

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func check(err error) {
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
}

func main() {
	check(os.WriteFile("a.txt", []byte("hello\nworld\n"), 0o644))
	f, err := os.OpenFile("a.txt", os.O_APPEND|os.O_WRONLY, 0)
	check(err)
	fmt.Fprintf(f, "line %d\n", 3)
	check(f.Sync())
	check(f.Close())
	b, err := os.ReadFile("a.txt")
	check(err)
	fmt.Printf("%q\n", b)

	f, err = os.Create("b.bin")
	check(err)
	w := bufio.NewWriter(f)
	for i := 0; i < 100000; i++ {
		w.WriteByte(byte(i))
	}
	check(w.Flush())
	_, err = f.Seek(10, io.SeekStart)
	check(err)
	f.Write([]byte("XY"))
	buf := make([]byte, 4)
	_, err = f.ReadAt(buf, 9)
	check(err)
	fmt.Println("readat", buf)
	check(f.Truncate(1000))
	fi, err := f.Stat()
	check(err)
	fmt.Println("size", fi.Size(), fi.Mode().IsRegular(), fi.Mode().Perm())
	check(f.Close())

	check(os.MkdirAll("d/e/f", 0o755))
	check(os.Rename("b.bin", "d/e/b.bin"))
	check(os.Link("a.txt", "d/hard.txt"))
	check(os.Symlink("../a.txt", "d/soft.txt"))
	target, err := os.Readlink("d/soft.txt")
	check(err)
	fmt.Println("readlink", target)
	st, _ := os.Stat("d/soft.txt")
	lst, _ := os.Lstat("d/soft.txt")
	fmt.Println("stat", st.Mode().IsRegular(), lst.Mode()&fs.ModeSymlink != 0)
	check(os.Chmod("a.txt", 0o600))
	mt := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	check(os.Chtimes("a.txt", mt, mt))
	fi, _ = os.Stat("a.txt")
	fmt.Println("chmod chtimes", fi.Mode().Perm(), fi.ModTime().UTC())

	var paths []string
	check(filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !strings.HasPrefix(p, "prog") && !strings.HasSuffix(p, ".go") && p != "go.mod" {
			paths = append(paths, fmt.Sprintf("%s:%v", p, d.IsDir()))
		}
		return nil
	}))
	fmt.Println(paths)
	entries, err := os.ReadDir("d")
	check(err)
	for _, e := range entries {
		fmt.Print(e.Name(), " ", e.Type(), "; ")
	}
	fmt.Println()

	tf, err := os.CreateTemp("", "prog-*.tmp")
	check(err)
	tf.WriteString("temp")
	fmt.Println("temp in TMPDIR", filepath.Dir(tf.Name()) == os.TempDir(), strings.HasSuffix(tf.Name(), ".tmp"))
	tf.Close()
	check(os.Remove(tf.Name()))
	td, err := os.MkdirTemp("", "dir-")
	check(err)
	check(os.RemoveAll(td))
	check(os.RemoveAll("d"))
	_, err = os.Stat("d")
	fmt.Println("removed", os.IsNotExist(err))
	wd, _ := os.Getwd()
	fmt.Println("wd", wd)
}
