// Command gotls links crypto/tls.(*Conn).Read, Write and Close, for the
// tests of the Go probes' placement: it makes one TLS call when given an
// address, and none otherwise.
package main

import (
	"crypto/tls"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		return
	}
	c, err := tls.Dial("tcp", os.Args[1], &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer c.Close()
	_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	_, _ = c.Read(make([]byte, 512))
}
