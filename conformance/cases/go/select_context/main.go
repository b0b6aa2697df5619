// Command prog cancels work with contexts and selects.
package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

type key string

func worker(ctx context.Context, id int, out chan<- string, wg *sync.WaitGroup) {
	defer wg.Done()
	n := 0
	for {
		select {
		case <-ctx.Done():
			out <- fmt.Sprintf("worker %d stopped: %v, worked: %v", id, ctx.Err(), n > 0)
			return
		default:
			n++
			time.Sleep(time.Millisecond)
		}
	}
}

func main() {
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key("user"), "ann"))
	out := make(chan string, 3)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go worker(ctx, i, out, &wg)
	}
	time.Sleep(10 * time.Millisecond)
	cancel()
	wg.Wait()
	close(out)
	got := map[string]bool{}
	for s := range out {
		got[s] = true
	}
	for i := 0; i < 3; i++ {
		fmt.Println(got[fmt.Sprintf("worker %d stopped: context canceled, worked: true", i)])
	}
	fmt.Println("value", ctx.Value(key("user")))

	tctx, tcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer tcancel()
	select {
	case <-tctx.Done():
		fmt.Println("timeout", errors.Is(tctx.Err(), context.DeadlineExceeded))
	case <-time.After(10 * time.Second):
		fmt.Println("never")
	}
	c := make(chan int, 1)
	for i := 0; i < 3; i++ {
		select {
		case c <- i:
			fmt.Println("sent", i)
		case v := <-c:
			fmt.Println("received", v)
		}
	}
	cctx, ccancel := context.WithCancelCause(context.Background())
	ccancel(errors.New("custom cause"))
	fmt.Println(context.Cause(cctx))
}
