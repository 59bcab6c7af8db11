// Package intelsysfstest serves the sysfs fixtures of Intel GPUs
// (internal/intelsysfs/testdata, txtar archives) to the tests of package
// intelsysfs and of the gpu Source. It reads them with package
// amdsysfstest's parser, and its Faulty fails chosen reads.
package intelsysfstest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"testing/fstest"

	"github.com/xpuscope/xpuscope/internal/amdsysfs/amdsysfstest"
)

// Load returns the fixture internal/intelsysfs/testdata/<name>.txtar as a
// file system rooted where sysfs is mounted.
func Load(t testing.TB, name string) fstest.MapFS {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "testdata", name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	return amdsysfstest.Parse(b)
}

// Merge returns one file system holding the files of every fs given (a
// node with GPUs of both Intel drivers, say); a later one wins a name.
func Merge(fss ...fstest.MapFS) fstest.MapFS {
	out := fstest.MapFS{}
	for _, f := range fss {
		for k, v := range f {
			out[k] = v
		}
	}
	return out
}
