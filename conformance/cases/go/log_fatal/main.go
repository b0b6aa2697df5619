// Command prog logs and dies.
package main

import (
	"fmt"
	"log"
	"os"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("prog: ")
	fmt.Println("working")
	log.Println("a log line")
	l := log.New(os.Stdout, "[out] ", log.Lmsgprefix)
	l.Printf("to stdout %d", 1)
	if _, err := os.Open("missing.cfg"); err != nil {
		log.Fatalf("cannot start: %v", err)
	}
	fmt.Println("never")
}
