// Command prog indexes past the end of a slice.
package main

import (
	"fmt"
	"os"
)

func get(xs []int, i int) int {
	return xs[i]
}

func main() {
	xs := []int{1, 2, 3}
	fmt.Println("sum", xs[0]+xs[1]+xs[2])
	idx := len(os.Args) + 4
	fmt.Println(get(xs, idx))
}
