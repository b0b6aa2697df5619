// Command prog moves data through pipes between goroutines.
package main

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
)

func main() {
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	go func() {
		bw := bufio.NewWriter(w)
		for i := 0; i < 200000; i++ {
			fmt.Fprintf(bw, "%d\n", i)
		}
		bw.Flush()
		w.Close()
	}()
	h := sha256.New()
	n, err := io.Copy(h, r)
	fmt.Printf("os.Pipe %d %v %x\n", n, err, h.Sum(nil)[:8])
	r.Close()

	pr, pw := io.Pipe()
	go func() {
		for i := 0; i < 5; i++ {
			fmt.Fprintf(pw, "chunk %d;", i)
		}
		pw.CloseWithError(io.ErrUnexpectedEOF)
	}()
	b, err := io.ReadAll(pr)
	fmt.Println(string(b), err)

	r2, w2, _ := os.Pipe()
	done := make(chan string)
	go func() {
		sc := bufio.NewScanner(r2)
		n := 0
		for sc.Scan() {
			n++
		}
		done <- fmt.Sprint("lines ", n)
	}()
	for i := 0; i < 1000; i++ {
		w2.WriteString("line\n")
	}
	w2.Close()
	fmt.Println(<-done)
}
