// Command prog kills itself.
package main

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

func main() {
	fmt.Println("before")
	os.Stdout.Sync()
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	time.Sleep(10 * time.Second)
	fmt.Println("after (never printed)")
}
