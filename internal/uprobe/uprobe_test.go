package uprobe

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/elfsym"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

// buildELF compiles src with gcc and the given flags.
func buildELF(t testing.TB, src string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		testutil.SkipOrFail(t, "gcc is needed: %v", err)
	}
	return buildELFWith(t, "gcc", src, flags...)
}

// buildELFWith builds the C source src with the C compiler cc and flags
// (testutil.CC names one for each architecture).
func buildELFWith(t testing.TB, cc, src string, flags ...string) string {
	t.Helper()
	dir := t.TempDir()
	c := filepath.Join(dir, "x.c")
	require.NoError(t, os.WriteFile(c, []byte(src), 0o644))
	out := filepath.Join(dir, "x")
	b, err := exec.Command(cc, append(flags, "-o", out, c)...).CombinedOutput()
	require.NoError(t, err, "%s %v: %s", cc, flags, b)
	return out
}

const src = `
int cudaLaunchKernel(void) { return 7; }
static int hidden(void) { return 1; }
int main(void) { return cudaLaunchKernel() + hidden(); }
`

// resolve must agree with elfsym, which the symbolizer uses, on where a
// symbol is in the file.
func TestResolveAgreesWithElfsym(t *testing.T) {
	for _, tc := range []struct {
		name   string
		flags  []string
		symtab bool
		found  bool
	}{
		{"shared library, .dynsym", []string{"-shared", "-fPIC"}, false, true},
		{"PIE executable, .symtab only", []string{"-O0", "-pie", "-fPIE"}, true, true},
		{"PIE executable, .dynsym only", []string{"-O0", "-pie", "-fPIE"}, false, false},
		{"stripped executable", []string{"-O0", "-s"}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := buildELF(t, src, tc.flags...)
			got, err := resolve(path, map[string]bool{"cudaLaunchKernel": true, "hidden": true}, tc.symtab)
			require.NoError(t, err)
			off, ok := got["cudaLaunchKernel"]
			require.Equal(t, tc.found, ok)
			if !ok {
				return
			}
			table, err := elfsym.Open(path, elfsym.Limits{})
			require.NoError(t, err)
			want, ok := table.Address("cudaLaunchKernel")
			require.True(t, ok)
			assert.Equal(t, want, off)
		})
	}
}

func TestResolveNotELF(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755))
	_, err := resolve(p, map[string]bool{"a": true}, true)
	require.ErrorContains(t, err, "not an ELF file")
	require.ErrorContains(t, err, p)
}

func FuzzResolveELF(f *testing.F) {
	if b, err := os.ReadFile("/proc/self/exe"); err == nil && len(b) < 64<<20 {
		f.Add(b[:min(len(b), 1<<16)])
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := resolveELF(bytes.NewReader(b), map[string]bool{"main": true, "cudaLaunchKernel": true}, true)
		if err == nil && len(got) > 2 {
			require.LessOrEqual(t, len(got), 2, "resolved %d names, asked for 2", len(got))
		}
	})
}

func TestNamed(t *testing.T) {
	loaders := []string{loaderName}
	for name, want := range map[string]bool{
		"ld-linux-x86-64.so.2": true, "ld-musl-x86_64.so.1": true, "ld-2.31.so": true,
		"libc.so.6": false, "ldconfig": false, "ld.so.cache": false,
	} {
		assert.Equal(t, want, named(name, loaders), name)
	}
	assert.True(t, named("libcudart.so.12", []string{"libcuda.so", "libcudart.so"}))
	assert.False(t, named("libcudart.so.12", nil))
}
