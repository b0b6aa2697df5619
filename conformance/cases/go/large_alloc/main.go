// Command prog allocates a lot of memory.
package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

type node struct {
	next *node
	val  [4]int
}

func main() {
	big := make([]byte, 100<<20)
	for i := 0; i < len(big); i += 4096 {
		big[i] = byte(i >> 12)
	}
	sum := 0
	for i := 0; i < len(big); i += 4096 {
		sum += int(big[i])
	}
	fmt.Println("big", len(big), sum)
	big = nil
	runtime.GC()
	debug.FreeOSMemory()
	var head *node
	for i := 0; i < 1_000_000; i++ {
		head = &node{next: head, val: [4]int{i}}
	}
	n := 0
	for p := head; p != nil; p = p.next {
		n++
	}
	fmt.Println("list", n)
	m := make(map[int]string)
	for i := 0; i < 500_000; i++ {
		m[i] = "v"
	}
	fmt.Println("map", len(m))
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Println("stats", ms.NumGC > 0, ms.TotalAlloc > 100<<20, ms.Sys > 0)
}
