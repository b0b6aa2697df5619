// Command prog recurses until the stack limit.
package main

import (
	"fmt"
	"runtime/debug"
)

func down(n int) int {
	var pad [16]int
	pad[n%16] = n
	return down(n+1) + pad[0]
}

func main() {
	debug.SetMaxStack(64 << 20)
	fmt.Println("recursing")
	fmt.Println(down(0))
}
