package elfsym

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// maxDemangled bounds the length of a demangled name: 1<<16 bytes.
const maxDemangled = 16

// Demangle returns the C++ (Itanium ABI) or Rust reading of a mangled
// symbol name, "vectorAdd(float*, float*, float*, int)" for
// "_Z9vectorAddPfS_S_i", and name itself when it is not mangled or does
// not demangle. A name that cannot be mangled (a C or Go name) costs a
// prefix check.
func Demangle(name string) string {
	if !strings.HasPrefix(name, "_Z") && !strings.HasPrefix(name, "_R") &&
		!strings.HasPrefix(name, "_GLOBAL_") {
		return name
	}
	return demangleSlow(name)
}

func demangleSlow(name string) (out string) {
	// The demangler reports bad input as errors; a panic would be its bug,
	// and still must not take the tracer down.
	defer func() {
		if recover() != nil {
			out = name
		}
	}()
	s, err := demangle.ToString(name, demangle.MaxLength(maxDemangled))
	if err != nil || s == "" {
		return name
	}
	return s
}
