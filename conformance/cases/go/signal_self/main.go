// Command prog sends signals to itself and handles them.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// check ends the program when a signal could not be sent (it would wait
// for it forever).
func check(err error) {
	if err != nil {
		fmt.Println("kill:", err)
		os.Exit(1)
	}
}

func main() {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGUSR1, syscall.SIGUSR2)
	pid := os.Getpid()
	check(syscall.Kill(pid, syscall.SIGUSR1))
	fmt.Println("got", <-ch)
	p, _ := os.FindProcess(pid)
	check(p.Signal(syscall.SIGUSR2))
	fmt.Println("got", <-ch)
	signal.Ignore(syscall.SIGHUP)
	check(syscall.Kill(pid, syscall.SIGHUP))
	fmt.Println("ignored", signal.Ignored(syscall.SIGHUP))
	signal.Stop(ch)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	check(syscall.Kill(pid, syscall.SIGTERM))
	select {
	case <-ctx.Done():
		fmt.Println("context done:", context.Cause(ctx))
	case <-time.After(10 * time.Second):
		fmt.Println("no signal")
	}
	fmt.Println("alive", syscall.Kill(pid, 0))
}
