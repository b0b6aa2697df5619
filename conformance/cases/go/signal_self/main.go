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

func main() {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGUSR1, syscall.SIGUSR2)
	pid := os.Getpid()
	syscall.Kill(pid, syscall.SIGUSR1)
	fmt.Println("got", <-ch)
	p, _ := os.FindProcess(pid)
	p.Signal(syscall.SIGUSR2)
	fmt.Println("got", <-ch)
	signal.Ignore(syscall.SIGHUP)
	syscall.Kill(pid, syscall.SIGHUP)
	fmt.Println("ignored", signal.Ignored(syscall.SIGHUP))
	signal.Stop(ch)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-ctx.Done():
		fmt.Println("context done:", context.Cause(ctx))
	case <-time.After(10 * time.Second):
		fmt.Println("no signal")
	}
	fmt.Println("alive", syscall.Kill(pid, 0))
}
