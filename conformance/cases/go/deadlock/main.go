// Command prog blocks forever on a channel nobody writes.
package main

import (
	"fmt"
	"sync"
)

func main() {
	var wg sync.WaitGroup
	ch := make(chan int)
	wg.Add(1)
	go func() {
		defer wg.Done()
		ch <- 1
	}()
	fmt.Println("got", <-ch)
	wg.Wait()
	fmt.Println("waiting for a value that never comes")
	<-ch
}
