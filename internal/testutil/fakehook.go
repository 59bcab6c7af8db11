package testutil

import (
	"testing"

	"github.com/ebitengine/purego"
)

// FakeHook binds fptr to name, a test hook that a fake vendor library
// built by the tests exports (not part of the vendor's API), through a
// handle of lib of its own, closed when the test ends.
func FakeHook(t testing.TB, lib, name string, fptr any) {
	t.Helper()
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatalf("testutil: dlopen %s: %v", lib, err)
	}
	t.Cleanup(func() { _ = purego.Dlclose(h) })
	addr, err := purego.Dlsym(h, name)
	if err != nil {
		t.Fatalf("testutil: %s in %s: %v", name, lib, err)
	}
	purego.RegisterFunc(fptr, addr)
}
