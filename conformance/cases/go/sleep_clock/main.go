// Command prog sleeps and checks the clocks.
package main

import (
	"fmt"
	"sync"
	"time"
)

func main() {
	for _, d := range []time.Duration{0, time.Microsecond, time.Millisecond, 30 * time.Millisecond} {
		t0 := time.Now()
		time.Sleep(d)
		fmt.Println("sleep", d, time.Since(t0) >= d)
	}
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(50 * time.Millisecond)
		}()
	}
	wg.Wait()
	el := time.Since(t0)
	fmt.Println("100 sleepers together", el >= 50*time.Millisecond, el < 5*time.Second)
	now := time.Now()
	fmt.Println("wall", now.Year() >= 2024, now.Location() == time.Local, time.Until(now.Add(time.Hour)) > 59*time.Minute)
	fmt.Println("unix", now.Unix() > 1700000000, now.UnixNano()/1e9 == now.Unix())
	fmt.Println("round", now.Round(0).Equal(now), (1500 * time.Millisecond).String(), time.Duration(90)*time.Second)
}
