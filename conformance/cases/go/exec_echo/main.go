// Command prog starts other programs.
package main

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

func main() {
	out, err := exec.Command("/bin/echo", "hello", "from", "echo").Output()
	fmt.Printf("%q %v\n", out, err)
	cmd := exec.Command("sh", "-c", "tr a-z A-Z | rev")
	cmd.Stdin = strings.NewReader("pipeline\n")
	out, err = cmd.Output()
	fmt.Printf("%q %v\n", out, err)
	err = exec.Command("sh", "-c", "exit 5").Run()
	var ee *exec.ExitError
	fmt.Println(errors.As(err, &ee), ee.ExitCode())
	_, err = exec.LookPath("no-such-program-here")
	fmt.Println(errors.Is(err, exec.ErrNotFound))
	p, err := exec.LookPath("sh")
	fmt.Println(p != "", err)
	c := exec.Command("sleep", "10")
	c.Start()
	c.Process.Kill()
	err = c.Wait()
	fmt.Println("killed:", err)
	both, _ := exec.Command("sh", "-c", "echo out; echo err >&2").CombinedOutput()
	fmt.Printf("%q\n", both)
}
