// Command prog computes with arbitrary precision.
package main

import (
	"fmt"
	"math"
	"math/big"
)

func main() {
	f := new(big.Int).MulRange(1, 1000)
	s := f.String()
	fmt.Println(len(s), s[:20], new(big.Int).Mod(f, big.NewInt(1000000007)))
	a, b := big.NewInt(0), big.NewInt(1)
	for i := 0; i < 10000; i++ {
		a.Add(a, b)
		a, b = b, a
	}
	fmt.Println("fib", len(a.String()), new(big.Int).Mod(a, big.NewInt(1e9+7)))
	m := new(big.Int).Lsh(big.NewInt(1), 521)
	m.Sub(m, big.NewInt(1))
	fmt.Println("M521 prime", m.ProbablyPrime(20), new(big.Int).Exp(big.NewInt(3), big.NewInt(1e6), m).BitLen())
	g := new(big.Int).GCD(nil, nil, big.NewInt(2*3*5*7*11*13), big.NewInt(7*13*17))
	fmt.Println("gcd", g, new(big.Int).ModInverse(big.NewInt(3), big.NewInt(1000000007)))
	x := new(big.Float).SetPrec(700).SetInt64(2)
	x.Sqrt(x)
	fmt.Println(x.Text('f', 200))
	r := new(big.Rat)
	for k := int64(1); k <= 30; k++ {
		r.Add(r, big.NewRat(1, k))
	}
	fmt.Println(r, r.FloatString(20))
	fmt.Println(math.Sqrt(2), math.Pi, math.Exp(1), math.Inf(1), -math.MaxFloat64, math.NaN())
	fmt.Println(math.Floor(-2.5), math.Round(2.5), math.RoundToEven(2.5), math.Trunc(-2.7), math.Mod(7, -3))
	fmt.Printf("%.17g %b %x %e\n", 0.1+0.2, 1.0, 255.5, 6.02214076e23)
	fmt.Println(math.MaxInt64, math.MinInt64, uint64(math.MaxUint64), 7/-2, 7%-2, -7>>1)
}
