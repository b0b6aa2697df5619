// Command gohello is the Go workload of the seccomp trace: goroutines,
// channels, a mutex, timers, the garbage collector, fmt and os.
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	var nums []int
	sc := bufio.NewScanner(os.Stdin)
	sc.Split(bufio.ScanWords)
	for sc.Scan() {
		if n, err := strconv.Atoi(sc.Text()); err == nil {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)

	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		sum int
	)
	ch := make(chan int)
	for range 8 {
		wg.Go(func() {
			for v := range ch {
				mu.Lock()
				sum += v * v
				mu.Unlock()
			}
		})
	}
	for _, v := range nums {
		ch <- v
	}
	close(ch)
	wg.Wait()

	// Garbage, a collection and a timer.
	var keep [][]byte
	for i := range 64 {
		keep = append(keep, make([]byte, 1<<16+i))
	}
	runtime.GC()
	<-time.After(time.Millisecond)
	fmt.Printf("sorted %v squares %d kept %d procs %d\n", nums, sum, len(keep), runtime.GOMAXPROCS(0))
	fmt.Fprintln(os.Stderr, strings.Repeat("-", 3))
}
