// Command prog runs a pipeline of goroutines connected by channels.
package main

import (
	"fmt"
	"sort"
)

func gen(n int) <-chan int {
	out := make(chan int)
	go func() {
		defer close(out)
		for i := 1; i <= n; i++ {
			out <- i
		}
	}()
	return out
}

func square(in <-chan int) <-chan int {
	out := make(chan int, 16)
	go func() {
		defer close(out)
		for v := range in {
			out <- v * v
		}
	}()
	return out
}

func merge(ins ...<-chan int) <-chan int {
	out := make(chan int)
	done := make(chan struct{})
	for _, in := range ins {
		go func() {
			for v := range in {
				out <- v
			}
			done <- struct{}{}
		}()
	}
	go func() {
		for range ins {
			<-done
		}
		close(out)
	}()
	return out
}

func main() {
	src := gen(10000)
	workers := make([]<-chan int, 8)
	for i := range workers {
		workers[i] = square(src)
	}
	var all []int
	sum := 0
	for v := range merge(workers...) {
		all = append(all, v)
		sum += v
	}
	sort.Ints(all)
	fmt.Println(len(all), sum, all[:5], all[len(all)-1])

	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v + 1
		}
		close(pong)
	}()
	v := 0
	for i := 0; i < 100000; i++ {
		ping <- v
		v = <-pong
	}
	close(ping)
	_, ok := <-pong
	fmt.Println("ping-pong", v, ok)

	buf := make(chan string, 3)
	buf <- "a"
	buf <- "b"
	fmt.Println("buffered", len(buf), cap(buf), <-buf)
	var nilch chan int
	select {
	case <-nilch:
		fmt.Println("never")
	default:
		fmt.Println("nil channel blocks")
	}
}
