// Command prog panics and recovers in the ways programs do.
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

type myErr struct{ code int }

func (e *myErr) Error() string { return fmt.Sprintf("my error %d", e.code) }

func safe(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("recovered: %v", r)
		}
	}()
	f()
	return nil
}

func main() {
	for i := 0; i < 3; i++ {
		defer fmt.Println("deferred", i)
	}
	fmt.Println(safe(func() { panic("plain") }))
	fmt.Println(safe(func() { panic(&myErr{7}) }))
	fmt.Println(safe(func() {
		var a []int
		_ = a[3]
	}))
	fmt.Println(safe(func() {
		var m map[string]int
		m["x"] = 1
	}))
	fmt.Println(safe(func() {
		x := 0
		fmt.Println(1 / x)
	}))
	fmt.Println(safe(func() {
		defer func() {
			r := recover()
			panic(fmt.Sprint("again after ", r))
		}()
		panic("first")
	}))
	err := fmt.Errorf("wrapped: %w", &myErr{42})
	var me *myErr
	fmt.Println(errors.As(err, &me), me.code, errors.Unwrap(err) == me)
	_, err = os.Open("does-not-exist")
	fmt.Println(errors.Is(err, fs.ErrNotExist), err)
	joined := errors.Join(errors.New("a"), errors.New("b"))
	fmt.Printf("%q\n", joined.Error())
	fmt.Println(safe(func() { panic(fmt.Errorf("error value: %w", os.ErrClosed)) }))
}
