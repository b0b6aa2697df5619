// Command prog starts many goroutines.
package main

import (
	"fmt"
	"sync"
	"time"
)

func main() {
	start := make(chan struct{})
	results := make(chan int, 10000)
	var wg sync.WaitGroup
	for i := 0; i < 10000; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results <- i % 100
		}()
	}
	close(start)
	wg.Wait()
	close(results)
	sum := 0
	for v := range results {
		sum += v
	}
	fmt.Println("sum", sum)
	for i := 0; i < 10; i++ {
		go func() { time.Sleep(time.Hour) }()
	}
	fmt.Println("main returns")
}
