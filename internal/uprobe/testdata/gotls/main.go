// Command gotls links crypto/tls.(*Conn).Read, Write and Close, for the
// tests of the Go probes' placement. Given an address, it prints READY,
// waits for a line on stdin, then makes one TLS connection there, writes
// an HTTP/1.0 request, reads the whole response and prints its first
// line; given none, it does nothing.
package main

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"os"
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

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gotls:", err)
	os.Exit(1)
}
