// Command prog exercises the sync package under contention.
package main

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
)

func main() {
	var wg sync.WaitGroup
	var mu sync.Mutex
	counter := 0
	var atom atomic.Int64
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 2000; j++ {
				mu.Lock()
				counter++
				mu.Unlock()
				atom.Add(2)
			}
		}()
	}
	wg.Wait()
	fmt.Println("mutex", counter, "atomic", atom.Load())

	var rw sync.RWMutex
	data := map[int]int{}
	for i := 0; i < 10; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			rw.Lock()
			data[i] = i * i
			rw.Unlock()
		}()
		go func() {
			defer wg.Done()
			rw.RLock()
			_ = data[i]
			rw.RUnlock()
		}()
	}
	wg.Wait()
	fmt.Println("rwmutex", len(data), data[9])

	var once sync.Once
	calls := 0
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			once.Do(func() { calls++ })
		}()
	}
	wg.Wait()
	fmt.Println("once", calls)

	cond := sync.NewCond(&mu)
	ready := 0
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			ready++
			cond.Broadcast()
			mu.Unlock()
		}()
	}
	mu.Lock()
	for ready < 5 {
		cond.Wait()
	}
	mu.Unlock()
	wg.Wait()
	fmt.Println("cond", ready)

	var m sync.Map
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.Store(i%10, i%10)
		}()
	}
	wg.Wait()
	var keys []int
	m.Range(func(k, v any) bool {
		keys = append(keys, k.(int))
		return true
	})
	sort.Ints(keys)
	fmt.Println("sync.Map", keys)

	pool := sync.Pool{New: func() any { return new([64]byte) }}
	b := pool.Get().(*[64]byte)
	pool.Put(b)
	fmt.Println("pool", len(b))
	var flag atomic.Bool
	fmt.Println("cas", flag.CompareAndSwap(false, true), flag.CompareAndSwap(false, true))
}
