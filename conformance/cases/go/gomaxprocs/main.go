// Command prog computes in parallel; its output never names the CPU count.
package main

import (
	"fmt"
	"runtime"
	"sync"
)

func primes(lo, hi int) int {
	n := 0
	for i := max(lo, 2); i < hi; i++ {
		p := true
		for d := 2; d*d <= i; d++ {
			if i%d == 0 {
				p = false
				break
			}
		}
		if p {
			n++
		}
	}
	return n
}

func parallel(workers, limit int) int {
	var wg sync.WaitGroup
	counts := make([]int, workers)
	step := limit / workers
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hi := (w + 1) * step
			if w == workers-1 {
				hi = limit
			}
			counts[w] = primes(w*step, hi)
		}()
	}
	wg.Wait()
	total := 0
	for _, c := range counts {
		total += c
	}
	return total
}

func main() {
	fmt.Println("cpus", runtime.NumCPU() >= 1, runtime.GOMAXPROCS(0) >= 1)
	fmt.Println(parallel(runtime.NumCPU(), 300000))
	old := runtime.GOMAXPROCS(1)
	fmt.Println(parallel(7, 300000))
	runtime.GOMAXPROCS(4)
	fmt.Println(parallel(16, 300000))
	runtime.GOMAXPROCS(old)
	fmt.Println("restored", runtime.GOMAXPROCS(0) == old)
	fmt.Println(runtime.GOOS, runtime.GOARCH, runtime.Compiler)
}
