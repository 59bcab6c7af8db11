// Command tracerpkg writes the public API of a GPU runtime tracer package
// (cudatrace, hiptrace) over internal/gputrace: its Source, Status and
// Allocation types, New, the options and the defaults, and the test of
// them against the real runtime library. The packages share one engine,
// and so one text: generating it keeps their APIs from drifting apart.
// Run by go generate in each package:
//
//	//go:generate go run ../internal/cmd/tracerpkg -runtime cudatrace
//
// It writes source_gen.go and source_gen_test.go.
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
	// Held is whom WithLoadHold's doc says the load hold stops: lines
	// of a comment, the first to follow "a process that maps a copy of
	// the runtime the".
	Held string
	// The test's program (a cudaprog.Build name and its arguments), the
	// cudaprog function that locates the library it loads, its target,
	// and why its allocations fail here.
	Program, Args, RealLib, Target, NoAlloc string
}

type target struct{ Const, Doc, Value string }

var tracers = []tracer{
	{
		Package: "cudatrace", Runtime: "CUDA",
		Traces: "the CUDA runtime and driver APIs and NCCL", Files: "CUDA runtime, driver or NCCL library",
		Targets: []target{
			{"TargetRuntime", "the CUDA runtime (libcudart, or a program that links it statically)", "TargetRuntime"},
			{"TargetDriver", "the CUDA driver library (libcuda)", "TargetDriver"},
			{"TargetNCCL", "NCCL, NVIDIA's collective communication library (libnccl, or a program that links it statically)", "TargetNCCL"},
		},
		Held: "// Source has not probed yet (or a new file while it uses a probed one), or\n" +
			"// that runs a program not seen yet (which may link the runtime or NCCL in), is",
		Program: "cudaprog.RuntimeLaunch.Program", Args: "cudaprog.RuntimeLaunch.Name", RealLib: "RealCudart",
		Target: "TargetRuntime", NoAlloc: "every cudaMalloc failed (no GPU)",
	},
	{
		Package: "hiptrace", Runtime: "HIP",
		Traces: "the HIP runtime API (libamdhip64)", Files: "HIP runtime library (libamdhip64)",
		Targets: []target{
			{"TargetHIP", "the HIP runtime library (libamdhip64)", "TargetHIP"},
		},
		Held:    "// Source has not probed yet (or a new file while it uses a probed one) is",
		Program: `"hip"`, RealLib: "RealHIP", Target: "TargetHIP", NoAlloc: "hipMalloc failed (no /dev/kfd)",
	},
}

var (
	//go:embed source.go.tmpl
	source string
	//go:embed source_test.go.tmpl
	sourceTest string
)

func main() {
	runtime := flag.String("runtime", "", "the package to write: cudatrace or hiptrace")
	flag.Parse()
	i := slices.IndexFunc(tracers, func(t tracer) bool { return t.Package == *runtime })
	if i < 0 {
		fmt.Fprintf(os.Stderr, "tracerpkg: unknown -runtime %q (known: cudatrace, hiptrace)\n", *runtime)
		os.Exit(2)
	}
	for file, text := range map[string]string{"source_gen.go": source, "source_gen_test.go": sourceTest} {
		b, err := render(text, tracers[i])
		if err == nil {
			err = os.WriteFile(file, b, 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "tracerpkg: %s: %v\n", file, err)
			os.Exit(1)
		}
	}
}

// render returns text executed on t, gofmt-ed.
func render(text string, t tracer) ([]byte, error) {
	tmpl, err := template.New("source").Parse(text)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, t); err != nil {
		return nil, err
	}
	return format.Source(b.Bytes())
}
