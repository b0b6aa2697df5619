// Command prog reads all of stdin and sums the numbers in it.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var nums []int64
	var cur int64
	in := false
	for _, c := range data {
		if c >= '0' && c <= '9' {
			cur = cur*10 + int64(c-'0')
			in = true
		} else if in {
			nums = append(nums, cur)
			cur, in = 0, false
		}
	}
	if in {
		nums = append(nums, cur)
	}
	n := nums[0]
	var sum, weighted, mx int64
	for i, v := range nums[1:] {
		sum += v
		weighted = (weighted + v*int64(i+1)) % 1000000007
		mx = max(mx, v)
	}
	fmt.Println(len(data), n, sum, mx, weighted)
}
