package xpuscope_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoInternalTypeInPublicAPI: no exported identifier of a public
// package returns, takes, embeds or aliases a type of an internal/
// package. An importer could name none of them, nor read their docs. The
// packages are read from the compiler's export data, as an importer sees
// them.
func TestNoInternalTypeInPublicAPI(t *testing.T) {
	exports := exportData(t)
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	public := 0
	for path := range exports {
		if !strings.HasPrefix(path, module) || isInternal(path) || strings.HasPrefix(path, module+"/examples/") {
			continue
		}
		public++
		pkg, err := imp.Import(path)
		require.NoError(t, err, path)
		assert.Empty(t, internalTypes(pkg), "%s: internal types in the public API", path)
	}
	assert.GreaterOrEqual(t, public, 8, "public packages checked")
}

const module = "github.com/xpuscope/xpuscope"

func isInternal(path string) bool {
	return strings.Contains(path+"/", "/internal/")
}

// exportData builds the module's packages and returns where the compiler
// wrote each one's export data, by import path, dependencies included.
func exportData(t *testing.T) map[string]string {
	t.Helper()
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}"}, raceFlags...)
	cmd := exec.Command("go", append(args, "./...")...)
	cmd.Dir = "."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), " "); ok && file != "" {
			exports[path] = file
		}
	}
	return exports
}

// internalTypes lists where pkg's exported API names a type of an
// internal package.
func internalTypes(pkg *types.Package) []string {
	var leaks []string
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		check := func(where string, typ types.Type) {
			if p := internalIn(typ, map[types.Type]bool{}); p != "" {
				leaks = append(leaks, fmt.Sprintf("%s names %s", where, p))
			}
		}
		if tn, ok := obj.(*types.TypeName); ok {
			if tn.IsAlias() {
				check(name+" (an alias)", tn.Type())
				continue
			}
			named, _ := tn.Type().(*types.Named)
			if named == nil {
				continue
			}
			switch u := named.Underlying().(type) {
			case *types.Struct:
				for i := range u.NumFields() {
					if f := u.Field(i); f.Exported() || f.Embedded() {
						check(name+"."+f.Name(), f.Type())
					}
				}
			case *types.Interface:
				for i := range u.NumMethods() {
					if m := u.Method(i); m.Exported() {
						check(name+"."+m.Name(), m.Type())
					}
				}
				for i := range u.NumEmbeddeds() {
					check(name+" (embedded)", u.EmbeddedType(i))
				}
			default:
				check(name, u)
			}
			for _, typ := range []types.Type{named, types.NewPointer(named)} {
				ms := types.NewMethodSet(typ)
				for i := range ms.Len() {
					if m := ms.At(i).Obj(); m.Exported() {
						check(name+"."+m.Name(), m.Type())
					}
				}
			}
			continue
		}
		check(name, obj.Type())
	}
	return leaks
}

// internalIn returns the first internal package whose named type typ is
// or holds (in its elements, fields, parameters and results), or "".
func internalIn(typ types.Type, seen map[types.Type]bool) string {
	if seen[typ] {
		return ""
	}
	seen[typ] = true
	switch t := typ.(type) {
	case *types.Alias:
		return internalIn(types.Unalias(t), seen)
	case *types.Named:
		if p := t.Obj().Pkg(); p != nil && isInternal(p.Path()) {
			return p.Path() + "." + t.Obj().Name()
		}
		for i := range t.TypeArgs().Len() {
			if p := internalIn(t.TypeArgs().At(i), seen); p != "" {
				return p
			}
		}
		return ""
	case *types.Pointer:
		return internalIn(t.Elem(), seen)
	case *types.Slice:
		return internalIn(t.Elem(), seen)
	case *types.Array:
		return internalIn(t.Elem(), seen)
	case *types.Map:
		if p := internalIn(t.Key(), seen); p != "" {
			return p
		}
		return internalIn(t.Elem(), seen)
	case *types.Chan:
		return internalIn(t.Elem(), seen)
	case *types.Signature:
		for _, tuple := range []*types.Tuple{t.Params(), t.Results()} {
			for i := range tuple.Len() {
				if p := internalIn(tuple.At(i).Type(), seen); p != "" {
					return p
				}
			}
		}
	case *types.Struct:
		for i := range t.NumFields() {
			if f := t.Field(i); f.Exported() || f.Embedded() {
				if p := internalIn(f.Type(), seen); p != "" {
					return p
				}
			}
		}
	case *types.Interface:
		for i := range t.NumMethods() {
			if m := t.Method(i); m.Exported() {
				if p := internalIn(m.Type(), seen); p != "" {
					return p
				}
			}
		}
	}
	return ""
}
