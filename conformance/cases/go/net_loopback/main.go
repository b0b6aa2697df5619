// Command prog talks to itself over loopback sockets.
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
)

func check(err error) {
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
}

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					fmt.Fprintln(c, strings.ToUpper(sc.Text()))
				}
			}()
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var got []string
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", ln.Addr().String())
			check(err)
			defer c.Close()
			fmt.Fprintf(c, "client %d\n", i)
			line, err := bufio.NewReader(c).ReadString('\n')
			check(err)
			mu.Lock()
			got = append(got, strings.TrimSpace(line))
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Strings(got)
	fmt.Println(got)
	ln.Close()

	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, r.URL.Query().Get("q"))
	})}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	go srv.Serve(hl)
	resp, err := http.Get("http://" + hl.Addr().String() + "/path?q=1")
	check(err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))
	srv.Close()

	u1, err := net.ListenPacket("udp", "127.0.0.1:0")
	check(err)
	u2, err := net.ListenPacket("udp", "127.0.0.1:0")
	check(err)
	u1.WriteTo([]byte("datagram"), u2.LocalAddr())
	buf := make([]byte, 100)
	n, from, err := u2.ReadFrom(buf)
	check(err)
	fmt.Println("udp", string(buf[:n]), from.String() == u1.LocalAddr().String())
	u1.Close()
	u2.Close()

	ul, err := net.Listen("unix", "sock")
	check(err)
	go func() {
		c, err := ul.Accept()
		if err == nil {
			io.Copy(c, c)
			c.Close()
		}
	}()
	uc, err := net.Dial("unix", "sock")
	check(err)
	fmt.Fprint(uc, "over unix")
	uc.(*net.UnixConn).CloseWrite()
	echo, _ := io.ReadAll(uc)
	fmt.Println("unix", string(echo))
	uc.Close()
	ul.Close()
	_, err = os.Stat("sock")
	fmt.Println("socket file removed", os.IsNotExist(err))
}
