// Command gotls links crypto/tls.(*Conn).Read, Write and Close, for the
// tests of the Go probes' placement. Given an address, it prints READY,
// waits for a line on stdin, then makes one TLS connection there, writes
// an HTTP/1.0 request, reads the whole response and prints its first
// line; given none, it does nothing.
//
// Given -depths n, it prints READY, waits for a line, then calls
// (*Conn).Write n times, each on a new goroutine from a call depth one
// deeper than the last, so that some call finds too little stack at
// Write's bound check and grows it (runtime.morestack, after which Write
// starts over), and prints n. Each Write fails at once: its connection's
// other end is closed.
package main

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		return
	}
	fmt.Println("READY")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fail(err)
	}
	if os.Args[1] == "-depths" && len(os.Args) == 3 {
		n, err := strconv.Atoi(os.Args[2])
		if err != nil {
			fail(err)
		}
		writeAtDepths(n)
		fmt.Println(n)
		return
	}
	c, err := tls.Dial("tcp", os.Args[1], &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		fail(err)
	}
	if _, err := c.Write([]byte("GET / HTTP/1.0\r\n\r\n")); err != nil {
		fail(err)
	}
	b, err := io.ReadAll(c)
	if err != nil && !strings.Contains(err.Error(), "close notify") {
		fail(err)
	}
	first, _, _ := strings.Cut(string(b), "\r\n")
	fmt.Println(first)
	if err := c.Close(); err != nil {
		fail(err)
	}
}

// writeAtDepths calls (*Conn).Write n times, the ith from i calls deep on
// a goroutine of its own, straight from the deepest call: a call whose
// bound check fails before Write's would grow the stack there instead.
func writeAtDepths(n int) {
	for depth := range n {
		a, b := net.Pipe()
		b.Close()
		c := tls.Client(a, &tls.Config{InsecureSkipVerify: true})
		done := make(chan struct{})
		go func() {
			defer close(done)
			descend(depth, c)
		}()
		<-done
	}
}

var request = []byte("x")

//go:noinline
func descend(depth int, c *tls.Conn) {
	if depth == 0 {
		_, _ = c.Write(request)
		return
	}
	descend(depth-1, c)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gotls:", err)
	os.Exit(1)
}
