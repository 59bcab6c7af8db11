package dynlib

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestStrings(t *testing.T) {
	if got := BufString([]byte{'a', 'b', 0, 'c'}); got != "ab" {
		t.Errorf("BufString: %q", got)
	}
	if got := BufString([]byte("abc")); got != "abc" {
		t.Errorf("BufString without NUL: %q", got)
	}
	b := []byte("hello\x00world")
	if got := CString(&b[0], 100); got != "hello" {
		t.Errorf("CString: %q", got)
	}
	if got := CString(&b[0], 3); got != "hel" {
		t.Errorf("CString capped: %q", got)
	}
}

// TestOpen binds a C library built by the test (gcc): a required
// function the library lacks refuses it, an optional one is listed as
// missing and left unbound, and what is bound calls through.
func TestOpen(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatalf("gcc: %v (make deps installs it)", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "lib.c")
	if err := os.WriteFile(src, []byte("int twice(int x) { return 2 * x; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "libtest.so")
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v: %s", err, out)
	}

	var twice, thrice func(int32) int32
	l, err := Open(lib, "test", []Binding{{Name: "twice", Fn: &twice, Required: true}, {Name: "thrice", Fn: &thrice}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := twice(21); got != 42 {
		t.Errorf("twice(21) = %d", got)
	}
	if thrice != nil {
		t.Error("a function the library lacks was bound")
	}
	if !l.Has("twice") || l.Has("thrice") || l.Has("unknown") {
		t.Errorf("Has: twice %v, thrice %v, unknown %v", l.Has("twice"), l.Has("thrice"), l.Has("unknown"))
	}
	if m := l.Missing(); len(m) != 1 || m[0] != "thrice" {
		t.Errorf("Missing: %v", m)
	}
	if l.Path() != lib {
		t.Errorf("Path: %s", l.Path())
	}

	var f func() int32
	_, err = Open(lib, "test", []Binding{{Name: "thrice", Fn: &f, Required: true}})
	if err == nil || !strings.Contains(err.Error(), "is not a usable test library: it lacks thrice") {
		t.Errorf("a missing required function: %v", err)
	}
	_, err = Open(filepath.Join(dir, "nonexistent.so"), "test", nil)
	if err == nil || !strings.Contains(err.Error(), "test library") || errors.Is(err, os.ErrExist) {
		t.Errorf("no library: %v", err)
	}
}
