package bpfsource

import (
	"bufio"
	"go/build/constraint"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every architecture Platforms describes has every BPF object of the
// library built for it (a *_bpfel.go whose build constraint it
// satisfies), and every object is built for one of them at least: what
// -check says of an architecture is what the build has.
func TestPlatformsAreTheObjects(t *testing.T) {
	files, err := filepath.Glob("../*/*_bpfel.go")
	require.NoError(t, err)
	objects := map[string][]constraint.Expr{} // by package and stem
	for _, f := range files {
		fh, err := os.Open(f)
		require.NoError(t, err)
		var expr constraint.Expr
		for sc := bufio.NewScanner(fh); sc.Scan(); {
			if constraint.IsGoBuild(sc.Text()) {
				expr, err = constraint.Parse(sc.Text())
				require.NoError(t, err, f)
				break
			}
		}
		fh.Close()
		require.NotNil(t, expr, "%s: no //go:build line", f)
		stem := filepath.Join(filepath.Base(filepath.Dir(f)), strings.SplitN(filepath.Base(f), "_", 2)[0])
		objects[stem] = append(objects[stem], expr)
	}
	require.Len(t, objects, 4, "the BPF objects: %v", objects)
	built := func(exprs []constraint.Expr, goarch string) bool {
		for _, e := range exprs {
			if e.Eval(func(tag string) bool { return tag == goarch || tag == "linux" }) {
				return true
			}
		}
		return false
	}
	for goarch, p := range Platforms {
		assert.Equal(t, goarch, p.GOARCH)
		for stem, exprs := range objects {
			assert.True(t, built(exprs, goarch), "%s: no object for %s, which Platforms describes", stem, goarch)
		}
	}
	for stem, exprs := range objects {
		for _, e := range exprs {
			described := false
			for goarch := range Platforms {
				described = described || built([]constraint.Expr{e}, goarch)
			}
			assert.True(t, described, "%s's object for %s: no Platform describes it", stem, e)
		}
	}
}
