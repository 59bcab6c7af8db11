package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/gpu"
)

// settings are what the features take from the command line.
type settings struct {
	interval    time.Duration
	nvmlLibrary string
	procRoot    string
}

type state int

const (
	active state = iota
	unavailable
	fault
)

func (s state) String() string {
	return [...]string{"active", "unavailable", "fault"}[s]
}

// feature starts one Source. detail says what it attached to.
type feature struct {
	name  string
	start func(settings, metric.MeterProvider) (src xpuscope.Source, detail string, err error)
}

// features lists every Source of the library, in start order.
var features = []feature{
	{"gpu", startGPU},
}

func startGPU(s settings, mp metric.MeterProvider) (xpuscope.Source, string, error) {
	src, err := gpu.New(
		gpu.WithMeterProvider(mp),
		gpu.WithInterval(s.interval),
		gpu.WithNVMLLibraryPath(s.nvmlLibrary),
		gpu.WithProcRoot(s.procRoot),
	)
	if err != nil {
		return nil, "", err
	}
	var names []string
	instances := 0
	for _, d := range src.Devices() {
		if d.Parent != "" {
			instances++
			continue
		}
		names = append(names, fmt.Sprintf("%d:%s", d.Index, d.Name))
	}
	detail := fmt.Sprintf("nvml: %d GPU(s), driver %s: %s", len(names), src.DriverVersion(), strings.Join(names, ", "))
	if instances > 0 {
		detail += fmt.Sprintf("; %d MIG instance(s)", instances)
	}
	return src, detail, nil
}

type result struct {
	name   string
	state  state
	detail string
	src    xpuscope.Source
}

func startAll(s settings, mp metric.MeterProvider) []result {
	out := make([]result, 0, len(features))
	for _, f := range features {
		src, detail, err := f.start(s, mp)
		r := result{name: f.name, state: active, detail: detail, src: src}
		switch {
		case errors.Is(err, xpuscope.ErrUnavailable):
			r.state, r.detail = unavailable, err.Error()
		case err != nil:
			r.state, r.detail = fault, err.Error()
		}
		out = append(out, r)
	}
	return out
}

func faulted(rs []result) bool {
	for _, r := range rs {
		if r.state == fault {
			return true
		}
	}
	return false
}

func printCheck(w io.Writer, rs []result) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.name, r.state, r.detail)
	}
	tw.Flush()
}

func closeAll(rs []result, log *slog.Logger) {
	for _, r := range rs {
		if r.src == nil {
			continue
		}
		if err := r.src.Close(); err != nil {
			log.Error("close", "feature", r.name, "err", err)
		}
	}
}
