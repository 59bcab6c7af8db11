// Package dynlib loads a C library through purego, without cgo, and binds
// its functions, each looked up before it is bound: a required function
// the library lacks refuses the library; an optional one is left unbound
// and listed, so that only what needs it is lost. (An unresolved symbol
// must never be called: the process would die.)
package dynlib

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Binding binds the C function Name to *Fn, a pointer to a Go func
// variable of the function's signature; or, with Addr set instead, stores
// its address there, for a caller that calls it with purego.SyscallN
// (which, unlike a registered func, allocates nothing per call).
type Binding struct {
	Name     string
	Fn       any
	Addr     *uintptr
	Required bool
}

// Library is a loaded library and what of it was bound.
type Library struct {
	path    string
	handle  uintptr
	names   []string // every function of the bindings
	missing []string // the optional ones the library lacks
}

// Open loads the library at path (a soname the loader searches for, or a
// path) and binds bs. what names the library in errors ("ROCm SMI").
func Open(path, what string, bs []Binding) (*Library, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("%s library %s cannot be loaded: %w", what, path, err)
	}
	l := &Library{path: path, handle: h}
	for _, b := range bs {
		l.names = append(l.names, b.Name)
		addr, err := purego.Dlsym(h, b.Name)
		if err != nil || addr == 0 {
			if b.Required {
				_ = purego.Dlclose(h)
				return nil, fmt.Errorf("%s is not a usable %s library: it lacks %s", path, what, b.Name)
			}
			l.missing = append(l.missing, b.Name)
			continue
		}
		if b.Addr != nil {
			*b.Addr = addr
			continue
		}
		purego.RegisterFunc(b.Fn, addr)
	}
	return l, nil
}

// Path is what Open was given.
func (l *Library) Path() string { return l.path }

// Missing lists the optional functions the library lacks, in binding order.
func (l *Library) Missing() []string { return slices.Clone(l.missing) }

// Has reports whether the library exports sym, one of the bound functions.
func (l *Library) Has(sym string) bool {
	return slices.Contains(l.names, sym) && !slices.Contains(l.missing, sym)
}

// Close unloads the library.
func (l *Library) Close() error {
	if err := purego.Dlclose(l.handle); err != nil {
		return fmt.Errorf("dlclose %s: %w", l.path, err)
	}
	return nil
}

// CString copies the NUL-terminated C string at p, at most max bytes.
func CString(p *byte, max int) string {
	n := 0
	for n < max && *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// BufString returns the NUL-terminated string in b (all of b if there is
// no NUL).
func BufString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
