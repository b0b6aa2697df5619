// Command prog writes a large output through a buffered writer.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
)

func main() {
	w := bufio.NewWriterSize(os.Stdout, 1<<16)
	for i := 0; i < 40000; i++ {
		fmt.Fprintf(w, "%d %d\n", i, i*i%1000003)
	}
	var b []byte
	for i := 0; i < 40000; i++ {
		b = strconv.AppendInt(b[:0], int64(i*7919%100003), 10)
		b = append(b, ' ')
		w.Write(b)
	}
	w.WriteByte('\n')
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("unbuffered line")
	os.Stdout.WriteString("direct write\n")
}
