// Command prog uses timers and tickers; it prints what happened, not when.
package main

import (
	"fmt"
	"time"
)

func main() {
	start := time.Now()
	t := time.NewTimer(20 * time.Millisecond)
	<-t.C
	fmt.Println("timer fired", time.Since(start) >= 20*time.Millisecond)

	t = time.NewTimer(time.Hour)
	fmt.Println("stopped", t.Stop())
	t.Reset(5 * time.Millisecond)
	<-t.C
	fmt.Println("reset fired")

	done := make(chan string)
	time.AfterFunc(10*time.Millisecond, func() { done <- "afterfunc" })
	fmt.Println(<-done)

	tk := time.NewTicker(2 * time.Millisecond)
	n := 0
	for range tk.C {
		n++
		if n == 10 {
			tk.Stop()
			break
		}
	}
	fmt.Println("ticks", n)

	select {
	case <-time.After(10 * time.Millisecond):
		fmt.Println("time.After won")
	case <-make(chan int):
		fmt.Println("never")
	}
	timers := make([]*time.Timer, 100)
	fired := make(chan int, 100)
	for i := range timers {
		timers[i] = time.AfterFunc(time.Duration(i%10)*time.Millisecond, func() { fired <- i })
	}
	sum := 0
	for range timers {
		sum += <-fired
	}
	fmt.Println("100 timers", sum)
}
