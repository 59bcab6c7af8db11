// goabi calls what the genai capture probes in a Go program with marker
// constants, for the calling-convention test (abi_test.go), which reads
// from the Go compiler's own output where each goes. Nothing here runs:
// main only keeps the callers in the binary.
package main

import (
	"crypto/tls"
	"unsafe"
)

// at is a marker made a pointer.
func at(p uintptr) *byte { return (*byte)(unsafe.Pointer(p)) }

//go:noinline
func callWrite() { (*tls.Conn)(unsafe.Pointer(at(0x1111))).Write(unsafe.Slice(at(0x2211), 0x3311)) }

//go:noinline
func callRead() { (*tls.Conn)(unsafe.Pointer(at(0x1111))).Read(unsafe.Slice(at(0x2211), 0x3311)) }

//go:noinline
func callClose() { (*tls.Conn)(unsafe.Pointer(at(0x1111))).Close() }

// callCopy makes the runtime.memmove(to, from, n) call that
// crypto/tls.(*Conn).Read makes to copy its plaintext out.
//
//go:noinline
func callCopy() int { return copy(unsafe.Slice(at(0x4411), 0x6611), unsafe.Slice(at(0x5511), 0x6611)) }

// count returns as (*Conn).Read does.
//
//go:noinline
func count() (int, error) { return 0x7711, nil }

var keep = []any{callWrite, callRead, callClose, callCopy, count}

func main() {
	if len(keep) == 0 {
		callWrite()
	}
}
