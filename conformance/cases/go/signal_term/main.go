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
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		fmt.Println("kill:", err)
		os.Exit(1)
	}
	time.Sleep(10 * time.Second)
	fmt.Println("after (never printed)")
}
