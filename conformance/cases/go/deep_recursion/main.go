// Command prog recurses deeply; Go's stacks grow as needed.
package main

import (
	"fmt"
	"sync"
)

func depth(n int) int {
	if n == 0 {
		return 0
	}
	return depth(n-1) + 1
}

type tree struct{ kids [][]int32 }

func (t *tree) dfs(v int32, seen *int) {
	*seen++
	for _, c := range t.kids[v] {
		t.dfs(c, seen)
	}
}

func main() {
	fmt.Println(depth(2_000_000))
	n := 500_000
	t := &tree{kids: make([][]int32, n)}
	for v := 1; v < n; v++ {
		t.kids[v-1] = append(t.kids[v-1], int32(v))
	}
	seen := 0
	t.dfs(0, &seen)
	fmt.Println("dfs", seen)
	var wg sync.WaitGroup
	res := make([]int, 4)
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = depth(300_000 + i)
		}()
	}
	wg.Wait()
	fmt.Println(res)
}
