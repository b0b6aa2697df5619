package main

import (
	"sort"
	"strings"
)

// WordCount is a word and how often it occurs.
type WordCount struct {
	Word  string
	Count int
}

// Top returns the n most frequent words, lower-cased, the most frequent
// first, ties in alphabetical order.
func Top(words []string, n int) []WordCount {
	counts := make(map[string]int)
	for _, w := range words {
		counts[strings.ToLower(w)]++
	}
	var out []WordCount
	for w, c := range counts {
		out = append(out, WordCount{w, c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Word < out[j].Word
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}
