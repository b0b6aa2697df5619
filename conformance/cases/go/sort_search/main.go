// Command prog sorts and searches.
package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

type person struct {
	name string
	age  int
}

type byLen []string

func (b byLen) Len() int           { return len(b) }
func (b byLen) Less(i, j int) bool { return len(b[i]) < len(b[j]) }
func (b byLen) Swap(i, j int)      { b[i], b[j] = b[j], b[i] }

func main() {
	xs := make([]int, 200000)
	v := 12345
	for i := range xs {
		v = (v*1103515245 + 12345) % 2147483648
		xs[i] = v % 1000000
	}
	slices.Sort(xs)
	fmt.Println(xs[:5], xs[len(xs)-3:], slices.IsSorted(xs))
	i, found := slices.BinarySearch(xs, 500000)
	fmt.Println("search", i, found, sort.SearchInts(xs, 999999))
	people := []person{{"ann", 30}, {"bob", 25}, {"cid", 30}, {"dan", 25}, {"eve", 35}}
	sort.SliceStable(people, func(i, j int) bool { return people[i].age < people[j].age })
	fmt.Println(people)
	slices.SortFunc(people, func(a, b person) int {
		return cmp.Or(cmp.Compare(b.age, a.age), strings.Compare(a.name, b.name))
	})
	fmt.Println(people)
	words := byLen{"banana", "fig", "apple", "kiwi", "cherry"}
	sort.Stable(words)
	fmt.Println(words)
	m := map[string]int{"z": 1, "a": 2, "m": 3}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Print(k, "=", m[k], " ")
	}
	fmt.Println()
	fmt.Println(slices.Max(xs), slices.Index(xs, xs[100]), slices.Compact([]int{1, 1, 2, 2, 2, 3}))
}
