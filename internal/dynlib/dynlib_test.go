package dynlib

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

func TestStrings(t *testing.T) {
	assert.Equal(t, "ab", BufString([]byte{'a', 'b', 0, 'c'}), "BufString")
	assert.Equal(t, "abc", BufString([]byte("abc")), "BufString without NUL")
	b := []byte("hello\x00world")
	assert.Equal(t, "hello", CString(&b[0], 100), "CString")
	assert.Equal(t, "hel", CString(&b[0], 3), "CString capped")
}

// TestOpen binds a C library built by the test (gcc): a required
// function the library lacks refuses it, an optional one is listed as
// missing and left unbound, and what is bound calls through.
func TestOpen(t *testing.T) {
	testutil.Native(t, "C libraries built by the host's compiler")
	_, err := exec.LookPath("gcc")
	require.NoError(t, err, "gcc (make deps installs it)")
	dir := t.TempDir()
	src := filepath.Join(dir, "lib.c")
	require.NoError(t, os.WriteFile(src, []byte("int twice(int x) { return 2 * x; }\n"), 0o644))
	lib := filepath.Join(dir, "libtest.so")
	out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", lib, src).CombinedOutput()
	require.NoError(t, err, "gcc: %s", out)

	var twice, thrice func(int32) int32
	l, err := Open(lib, "test", []Binding{{Name: "twice", Fn: &twice, Required: true}, {Name: "thrice", Fn: &thrice}})
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, int32(42), twice(21), "twice(21)")
	assert.Nil(t, thrice, "a function the library lacks was bound")
	assert.True(t, l.Has("twice"), "Has twice")
	assert.False(t, l.Has("thrice"), "Has thrice")
	assert.False(t, l.Has("unknown"), "Has unknown")
	assert.Equal(t, []string{"thrice"}, l.Missing(), "Missing")
	assert.Equal(t, lib, l.Path(), "Path")

	// Addr: the address, for purego.SyscallN, instead of a func.
	var addr uintptr
	l2, err := Open(lib, "test", []Binding{{Name: "twice", Addr: &addr, Required: true}})
	require.NoError(t, err)
	defer l2.Close()
	require.NotZero(t, addr)
	r, _, _ := purego.SyscallN(addr, 21)
	assert.Equal(t, int32(42), int32(r), "twice(21) through its address")

	var f func() int32
	_, err = Open(lib, "test", []Binding{{Name: "thrice", Fn: &f, Required: true}})
	assert.ErrorContains(t, err, "is not a usable test library: it lacks thrice", "a missing required function")
	_, err = Open(filepath.Join(dir, "nonexistent.so"), "test", nil)
	assert.ErrorContains(t, err, "test library", "no library")
	assert.NotErrorIs(t, err, os.ErrExist, "no library")
}
