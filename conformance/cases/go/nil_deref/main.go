// Command prog dereferences a nil pointer.
package main

import "fmt"

type node struct {
	val  int
	next *node
}

func main() {
	n := &node{val: 1, next: &node{val: 2}}
	sum := 0
	for p := n; ; p = p.next {
		fmt.Println("visit", p.val)
		sum += p.next.val
	}
}
