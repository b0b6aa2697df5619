// Command prog reads pairs with a Scanner, then numbers with Fscan.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

func main() {
	r := bufio.NewReader(os.Stdin)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024), 1<<20)
	sc.Scan()
	n, _ := strconv.Atoi(sc.Text())
	var total, best int
	for i := 0; i < n && sc.Scan(); i++ {
		f := strings.Fields(sc.Text())
		a, _ := strconv.Atoi(f[0])
		b, _ := strconv.Atoi(f[1])
		total += a * b
		best = max(best, a+b)
	}
	sc.Scan()
	fmt.Println(total, best, len(sc.Text()))
	// The Scanner read ahead: the rest of its buffer is what is left.
	sc.Scan()
	k, _ := strconv.Atoi(sc.Text())
	sc.Scan()
	rest := bufio.NewReader(strings.NewReader(sc.Text()))
	sum := 0
	for i := 0; i < k; i++ {
		var v int
		fmt.Fscan(rest, &v)
		sum += v
	}
	var extra int
	_, err := fmt.Fscan(r, &extra)
	fmt.Println(k, sum, err)
}
