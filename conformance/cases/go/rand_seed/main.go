// Command prog draws seeded random numbers.
package main

import (
	"fmt"
	"math/rand"
	randv2 "math/rand/v2"
)

func main() {
	r := rand.New(rand.NewSource(42))
	fmt.Println(r.Intn(100), r.Int63(), r.Float64(), r.Perm(10))
	xs := []string{"a", "b", "c", "d", "e"}
	r.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	fmt.Println(xs, r.NormFloat64(), r.ExpFloat64())
	p := randv2.New(randv2.NewPCG(1, 2))
	fmt.Println(p.IntN(1000), p.Uint64(), p.Float64(), p.Perm(8))
	c := randv2.New(randv2.NewChaCha8([32]byte{1, 2, 3}))
	fmt.Println(c.Uint32(), c.Int64N(1e12))
	v := randv2.IntN(10)
	fmt.Println("global in range", v >= 0 && v < 10, rand.Intn(5) < 5)
}
