// Command tracerpkg writes the public API of a GPU runtime tracer package
// (cudatrace, hiptrace) over internal/gputrace: its Source, Status and
// Allocation types, New, the options and the defaults. The packages share
// one engine, and so one text: generating it keeps their APIs from
// drifting apart. Run by go generate in each package:
//
//	//go:generate go run ../internal/cmd/tracerpkg -runtime cudatrace -o source_gen.go
package main

import (
	"bytes"
	_ "embed"
	"flag"
	"fmt"
	"go/format"
	"os"
	"slices"
	"text/template"
)

// tracer is what differs between the packages.
type tracer struct {
	// Package is the package's name, and Runtime the gputrace.Runtime it
	// runs.
	Package, Runtime string
	// Traces says what a Source traces; Files what it attaches to (for
	// Status's rejections and New).
	Traces, Files string
	// Targets are the package's constants for gputrace's target names.
	Targets []target
}

type target struct{ Const, Doc, Value string }

var tracers = []tracer{
	{
		Package: "cudatrace", Runtime: "CUDA",
		Traces: "the CUDA runtime and driver APIs", Files: "CUDA runtime and driver library",
		Targets: []target{
			{"TargetRuntime", "the CUDA runtime (libcudart, or a program that links it statically)", "TargetRuntime"},
			{"TargetDriver", "the CUDA driver library (libcuda)", "TargetDriver"},
		},
	},
	{
		Package: "hiptrace", Runtime: "HIP",
		Traces: "the HIP runtime API (libamdhip64)", Files: "HIP runtime library (libamdhip64)",
		Targets: []target{
			{"TargetHIP", "the HIP runtime library (libamdhip64)", "TargetHIP"},
		},
	},
}

//go:embed source.go.tmpl
var source string

func main() {
	runtime := flag.String("runtime", "", "the package to write: cudatrace or hiptrace")
	out := flag.String("o", "source_gen.go", "the file to write")
	flag.Parse()
	i := slices.IndexFunc(tracers, func(t tracer) bool { return t.Package == *runtime })
	if i < 0 {
		fmt.Fprintf(os.Stderr, "tracerpkg: unknown -runtime %q (known: cudatrace, hiptrace)\n", *runtime)
		os.Exit(2)
	}
	b, err := render(tracers[i])
	if err == nil {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tracerpkg: %v\n", err)
		os.Exit(1)
	}
}

// render returns t's package source, gofmt-ed.
func render(t tracer) ([]byte, error) {
	tmpl, err := template.New("source").Parse(source)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, t); err != nil {
		return nil, err
	}
	return format.Source(b.Bytes())
}
