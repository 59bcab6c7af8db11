// Package amdsysfstest serves sysfs fixtures to the tests of package
// amdsysfs and of the gpu Source: trees written as txtar archives in
// internal/amdsysfs/testdata, and a file system that fails chosen reads
// the way a sysfs attribute's show function can (EAGAIN, EIO).
package amdsysfstest

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

// Load returns the fixture internal/amdsysfs/testdata/<name>.txtar as a
// file system rooted where sysfs is mounted.
func Load(t testing.TB, name string) fstest.MapFS {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "testdata", name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	return Parse(b)
}

// Parse reads a txtar archive (a comment, then files, each introduced by
// a "-- name --" line) into a file system.
func Parse(archive []byte) fstest.MapFS {
	fsys := fstest.MapFS{}
	var name string
	var data []byte
	flush := func() {
		if name != "" && fs.ValidPath(name) {
			fsys[name] = &fstest.MapFile{Data: data, Mode: 0o444}
		}
	}
	for len(archive) > 0 {
		var line []byte
		if i := bytes.IndexByte(archive, '\n'); i >= 0 {
			line, archive = archive[:i+1], archive[i+1:]
		} else {
			line, archive = archive, nil
		}
		if n, ok := marker(line); ok {
			flush()
			name, data = n, nil
			continue
		}
		if name != "" {
			data = append(data, line...)
		}
	}
	flush()
	return fsys
}

// marker returns the file name of a "-- name --" line.
func marker(line []byte) (string, bool) {
	s := strings.TrimRight(string(line), "\r\n")
	if !strings.HasPrefix(s, "-- ") || !strings.HasSuffix(s, " --") || len(s) < len("-- x --") {
		return "", false
	}
	return strings.TrimSpace(s[3 : len(s)-3]), true
}

// Faulty serves FS, except that reading a file named by Fail returns its
// error, as reading a sysfs attribute whose driver callback fails does.
type Faulty struct {
	FS   fs.FS
	mu   sync.Mutex
	errs map[string]error
}

// Fail makes reads of name fail with err; a nil err makes them succeed
// again.
func (f *Faulty) Fail(name string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.errs == nil {
		f.errs = map[string]error{}
	}
	if err == nil {
		delete(f.errs, name)
		return
	}
	f.errs[name] = err
}

// Open opens name in FS; the file fails its reads if Fail said so.
func (f *Faulty) Open(name string) (fs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	e := f.errs[name]
	f.mu.Unlock()
	if e != nil {
		return failingFile{file, e}, nil
	}
	return file, nil
}

type failingFile struct {
	fs.File
	err error
}

func (f failingFile) Read([]byte) (int, error) { return 0, f.err }
