// Command wordfreq prints the most frequent words of its standard input.
package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	sc := bufio.NewScanner(os.Stdin)
	sc.Split(bufio.ScanWords)
	var words []string
	for sc.Scan() {
		words = append(words, sc.Text())
	}
	for _, wc := range Top(words, 3) {
		fmt.Printf("%s %d\n", wc.Word, wc.Count)
	}
}
