// Command prog exits with status 3.
package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	defer fmt.Println("deferred: never printed")
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(w, "buffered, flushed")
	w.Flush()
	fmt.Fprintln(w, "buffered, never flushed")
	fmt.Fprintln(os.Stderr, "error: something went wrong")
	os.Exit(3)
}
