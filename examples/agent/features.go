package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/cudatrace"
	"github.com/xpuscope/xpuscope/examples/agent/internal/config"
	"github.com/xpuscope/xpuscope/genai"
	"github.com/xpuscope/xpuscope/genai/node"
	"github.com/xpuscope/xpuscope/genai/serving"
	"github.com/xpuscope/xpuscope/genai/training"
	"github.com/xpuscope/xpuscope/gpu"
	"github.com/xpuscope/xpuscope/hiptrace"
	"github.com/xpuscope/xpuscope/internal/bpfsource"
	"github.com/xpuscope/xpuscope/occupancy"
	"github.com/xpuscope/xpuscope/pmu"
	"github.com/xpuscope/xpuscope/podjoin"
	"github.com/xpuscope/xpuscope/semconv"
)

// settings are what the features take from the command line and the
// configuration, and what one feature learns for the next.
type settings struct {
	interval    time.Duration
	nvmlLibrary string
	procRoot    string
	// intelptTrigger is the unix socket that asks for Intel PT captures;
	// "" (the default) leaves Intel PT off.
	intelptTrigger string

	// genai: the LLM API capture.
	rates          genai.Rates
	hosts          genai.HostMap
	bodyLimit      int
	goTLS          bool
	contentCapture int // bytes per attribute; 0: off

	// gpus are the devices gpu found; nil when it did not start, and then
	// nothing is known of the node's GPUs.
	gpus []gpu.Device
	// nvidiaCapacity and amdCapacity are the capacity of the node's
	// NVIDIA and of its AMD GPUs, when gpu found each vendor's all alike.
	nvidiaCapacity, amdCapacity *occupancy.Capacity
	// resolver places the others' processes and devices in pods; nil
	// when podjoin is not active.
	resolver *podjoin.Resolver

	// serving reads the model servers; servingOff is set when the
	// configuration turns it off. The capture leaves to it the
	// gen_ai.server.* figures it reports; nil when it is not active.
	servingOff bool
	serving    *serving.Source

	// trainingOff is set when the configuration turns the training jobs'
	// Source off.
	trainingOff bool

	// node is the kernel's view of the node's AI workloads; nodeOff is
	// set when the configuration turns it off. The capture's calls get
	// their connections' retransmits from it; nil when it is not active.
	nodeOff bool
	node    *node.Source
}

// fromConfig takes the configuration's settings for the features; a price
// file that cannot be read is an error.
func (s *settings) fromConfig(cfg config.Config) error {
	llm := cfg.AIML.LLM
	var err error
	if s.rates, err = llm.Rates(); err != nil {
		return err
	}
	if s.hosts, err = llm.HostMap(); err != nil {
		return err
	}
	s.bodyLimit = llm.CaptureBodyLimit
	s.goTLS = llm.CaptureGoTLS
	s.contentCapture = llm.Content.CaptureBytes()
	s.servingOff = !cfg.AIML.Serving.Enabled
	s.trainingOff = !cfg.AIML.Training.Enabled
	s.nodeOff = !cfg.AIML.Node.Enabled
	return nil
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

// providers are where the Sources emit: the runtime tracers' histograms
// through their Producers, registered on the meter's readers, and their
// exited processes' series kept exitGrace for the slowest reader.
type providers struct {
	meter     metric.MeterProvider
	tracer    trace.TracerProvider
	cuda      *cudatrace.Producer
	hip       *hiptrace.Producer
	serving   *serving.Producer
	exitGrace time.Duration
}

// feature starts one Source. detail says what it attached to.
type feature struct {
	name  string
	start func(settings, providers) (src xpuscope.Source, detail string, err error)
}

// features lists every Source of the library, in start order: podjoin
// first, since the others label their series through it; serving before
// genai, whose capture leaves it the figures it reads from the servers,
// and before node, which names the servers' connections through it; node
// before genai, whose calls get their retransmits from it.
var features = []feature{
	{"podjoin", startPodjoin},
	{"gpu", startGPU},
	{"pmu", startPMU},
	{"cudatrace", startCUDATrace},
	{"hiptrace", startHIPTrace},
	{"serving", startServing},
	{"training", startTraining},
	{"node", startNode},
	{"genai", startGenAI},
	{"intelpt", startIntelPT},
}

// startPodjoin starts the pod resolver on the host's procfs, the
// kubelet's PodResources socket and the host's /var/log at their default
// paths (where the DaemonSet mounts them). A missing kubelet or log
// directory leaves it active, joining less: the detail says what.
func startPodjoin(s settings, p providers) (xpuscope.Source, string, error) {
	r, err := podjoin.New(
		podjoin.WithMeterProvider(p.meter),
		podjoin.WithProcRoot(s.procRoot),
	)
	if err != nil {
		return nil, "", err
	}
	return r, describePodjoin(r.Status()), nil
}

// describePodjoin says what the resolver can join: GPUs to pods through
// the kubelet, processes to pod names through the log directories.
func describePodjoin(st podjoin.Status) string {
	var b strings.Builder
	if st.KubeletUp {
		fmt.Fprintf(&b, "kubelet: up, %d pods, %d GPU device(s) allocated", st.Pods, st.Devices)
		if st.Shared > 0 {
			fmt.Fprintf(&b, " (%d shared by several pods: no pod labels)", st.Shared)
		}
	} else {
		fmt.Fprintf(&b, "kubelet: unavailable (%v): cgroup and environment joins only, no GPU-to-pod join", st.KubeletErr)
	}
	if st.LogErr != nil {
		fmt.Fprintf(&b, "; pod names: unavailable (%v): processes get their pod UID and container id only", st.LogErr)
	} else {
		fmt.Fprintf(&b, "; pod names: %d pods in the kubelet's log directories", st.NamedPods)
	}
	return b.String()
}

func startGenAI(s settings, p providers) (xpuscope.Source, string, error) {
	opts := []genai.CaptureOption{
		genai.WithMeterProvider(p.meter),
		genai.WithTracerProvider(p.tracer),
		genai.WithRates(s.rates),
		genai.WithHostMap(s.hosts),
		genai.WithBodyLimit(s.bodyLimit),
		genai.WithGoTLS(s.goTLS),
		genai.WithContentCapture(s.contentCapture),
		genai.WithProcRoot(s.procRoot),
	}
	if s.resolver != nil {
		opts = append(opts, genai.WithResolver(s.resolver))
	}
	if s.serving != nil {
		opts = append(opts, genai.WithServedElsewhere(s.serving.Reports))
	}
	if s.node != nil {
		opts = append(opts, genai.WithRetransmits(s.node.CallRetransmits))
	}
	c, err := genai.NewCapture(opts...)
	if err != nil {
		return nil, "", err
	}
	return c, describeCapture(c.Status()), nil
}

// describeCapture says which OpenSSL files and Go programs the TLS
// probes are attached to, and which ports are read in plaintext.
func describeCapture(st genai.CaptureStatus) string {
	var parts []string
	for _, target := range []struct{ name, what string }{
		{genai.TargetOpenSSL, "OpenSSL file(s)"}, {genai.TargetGoTLS, "Go program(s)"},
	} {
		var files strings.Builder
		n := 0
		for _, a := range st.Attachments {
			if a.Target == target.name {
				fmt.Fprintf(&files, " %s (pid %d)", a.Path, a.PID)
				n++
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("uprobes on %d %s:%s", n, target.what, files.String()))
		}
	}
	tls := "no OpenSSL or Go crypto/tls mapped yet; new processes and dlopen are watched"
	if len(parts) > 0 {
		tls = strings.Join(parts, "; ")
	}
	s := fmt.Sprintf("plaintext HTTP on ports %v", st.PlaintextPorts)
	if st.RawSyscalls != nil && len(st.PlaintextPorts) > 0 {
		s += fmt.Sprintf(" (at every system call: %v)", st.RawSyscalls)
	}
	s += "; TLS: " + tls
	for _, r := range st.Rejections {
		s += fmt.Sprintf("; not probed: %s (pid %d): %s", r.Path, r.PID, r.Reason)
	}
	return s
}

// errServingOff is the unavailable error of a serving turned off by the
// configuration.
var errServingOff = xpuscope.Unavailablef("serving: turned off by aiml.serving.enabled")

// startServing finds the model servers on the node and reads them, every
// -interval, their histograms through the serving Producer.
func startServing(s settings, p providers) (xpuscope.Source, string, error) {
	if s.servingOff {
		return nil, "", errServingOff
	}
	opts := []serving.Option{
		serving.WithMeterProvider(p.meter),
		serving.WithProducer(p.serving),
		serving.WithInterval(s.interval),
		serving.WithProcRoot(s.procRoot),
	}
	if s.resolver != nil {
		opts = append(opts, serving.WithResolver(s.resolver))
	}
	src, err := serving.New(opts...)
	if err != nil {
		return nil, "", err
	}
	return src, describeServing(src.Status()), nil
}

// describeServing lists each model server found: its kind and process,
// its endpoint (and the network namespace it is reached in), its models,
// and what could not be read and why.
func describeServing(st serving.Status) string {
	if len(st.Servers) == 0 {
		return "no model server found yet; processes are looked at every interval"
	}
	parts := make([]string, 0, len(st.Servers))
	for _, sv := range st.Servers {
		var b strings.Builder
		fmt.Fprintf(&b, "%s (pid %d", sv.Kind, sv.PID)
		if n := len(sv.Processes); n > 1 {
			fmt.Fprintf(&b, ", %d processes", n)
		}
		b.WriteString(")")
		switch {
		case sv.Endpoint != "" && sv.NetNS != "":
			fmt.Fprintf(&b, " at %s in %s", sv.Endpoint, sv.NetNS)
		case sv.Endpoint != "":
			fmt.Fprintf(&b, " at %s", sv.Endpoint)
		default:
			b.WriteString(": no endpoint")
		}
		if len(sv.Models) > 0 {
			fmt.Fprintf(&b, ", models %s", strings.Join(sv.Models, ", "))
		}
		if !sv.Read && len(sv.Problems) > 0 {
			fmt.Fprintf(&b, "; not read: %s", strings.Join(sv.Problems, "; "))
		}
		parts = append(parts, b.String())
	}
	out := fmt.Sprintf("%d model server(s): %s", len(st.Servers), strings.Join(parts, " | "))
	if !st.Histograms {
		out += "; their histograms are not reported (no Producer)"
	}
	return out
}

// errNodeOff is the unavailable error of a node Source turned off by the
// configuration.
var errNodeOff = xpuscope.Unavailablef("node: turned off by aiml.node.enabled")

// startNode starts the kernel's view of the node's AI workloads: TCP
// retransmits and resets (the model servers' connections named through
// serving), model files' I/O and page cache.
func startNode(s settings, p providers) (xpuscope.Source, string, error) {
	if s.nodeOff {
		return nil, "", errNodeOff
	}
	opts := []node.Option{
		node.WithMeterProvider(p.meter),
		node.WithTracerProvider(p.tracer),
		node.WithProcRoot(s.procRoot),
	}
	if s.resolver != nil {
		opts = append(opts, node.WithResolver(s.resolver))
	}
	if s.serving != nil {
		opts = append(opts, node.WithModelServers(s.serving.Serves))
	}
	src, err := node.New(opts...)
	if err != nil {
		return nil, "", err
	}
	return src, describeNode(src.Status()), nil
}

// describeNode says which parts run, what the kernel lacks, and the model
// files watched.
func describeNode(st node.Status) string {
	var parts []string
	for _, p := range []struct {
		on   bool
		name string
	}{{st.TCP, "TCP retransmits and resets"}, {st.PageCache, "model files' page cache and faults"}, {st.FileSyscalls, "model files' opens and reads"}} {
		if p.on {
			parts = append(parts, p.name)
		}
	}
	d := strings.Join(parts, ", ")
	if len(st.Missing) > 0 {
		d += fmt.Sprintf("; the kernel lacks %s", strings.Join(st.Missing, ", "))
	}
	return d + fmt.Sprintf("; %d model file(s) watched; TCP server ports %v", len(st.Files), st.ServerPorts)
}

// errTrainingOff is the unavailable error of a training Source turned off
// by the configuration.
var errTrainingOff = xpuscope.Unavailablef("training: turned off by aiml.training.enabled")

// startTraining finds the training jobs on the node and reads what they
// write, every -interval.
func startTraining(s settings, p providers) (xpuscope.Source, string, error) {
	if s.trainingOff {
		return nil, "", errTrainingOff
	}
	opts := []training.Option{
		training.WithMeterProvider(p.meter),
		training.WithInterval(s.interval),
		training.WithProcRoot(s.procRoot),
	}
	if s.resolver != nil {
		opts = append(opts, training.WithResolver(s.resolver))
	}
	src, err := training.New(opts...)
	if err != nil {
		return nil, "", err
	}
	return src, describeTraining(src.Status()), nil
}

// describeTraining lists each training job found: its framework and
// launcher, its process, each file it is read from (format, path as the
// job names it, run, records), and what could not be read and why.
func describeTraining(st training.Status) string {
	if len(st.Jobs) == 0 {
		return "no training job found yet; processes are looked at every interval"
	}
	parts := make([]string, 0, len(st.Jobs))
	for _, j := range st.Jobs {
		var b strings.Builder
		fw := j.Framework
		if fw == "" {
			fw = "unknown framework"
		}
		fmt.Fprintf(&b, "%s (pid %d, %s", fw, j.PID, j.Executable)
		if j.Launcher != "" {
			fmt.Fprintf(&b, ", launched by %s", j.Launcher)
		}
		if n := len(j.Processes); n > 1 {
			fmt.Fprintf(&b, ", %d processes", n)
		}
		b.WriteString(")")
		if len(j.Files) > 0 {
			files := make([]string, 0, len(j.Files))
			for _, f := range j.Files {
				fs := fmt.Sprintf("%s %s (run %s, %d records)", f.Format, f.Path, f.Run, f.Records)
				if f.Problem != "" {
					fs += ": " + f.Problem
				}
				files = append(files, fs)
			}
			fmt.Fprintf(&b, " reads %s", strings.Join(files, ", "))
		}
		if len(j.Problems) > 0 {
			fmt.Fprintf(&b, "; %s", strings.Join(j.Problems, "; "))
		}
		parts = append(parts, b.String())
	}
	return fmt.Sprintf("%d training job(s): %s", len(st.Jobs), strings.Join(parts, " | "))
}

func startCUDATrace(s settings, p providers) (xpuscope.Source, string, error) {
	opts := []cudatrace.Option{
		cudatrace.WithMeterProvider(p.meter),
		cudatrace.WithTracerProvider(p.tracer),
		cudatrace.WithProducer(p.cuda),
		cudatrace.WithExitGrace(p.exitGrace),
		cudatrace.WithProcRoot(s.procRoot),
	}
	if s.nvidiaCapacity != nil {
		opts = append(opts, cudatrace.WithDeviceCapacity(*s.nvidiaCapacity, occupancy.CapacityNVML))
	}
	ring, why := ringFor(s.gpus, semconv.VendorNVIDIA)
	if ring != 0 {
		opts = append(opts, cudatrace.WithRingBufferSize(ring))
	}
	if s.resolver != nil {
		opts = append(opts, cudatrace.WithResolver(s.resolver))
	}
	src, err := cudatrace.New(opts...)
	if err != nil {
		return nil, "", err
	}
	st := src.Status()
	return src, describeTrace(st.Attachments, st.Rejections, "CUDA", why), nil
}

// startHIPTrace starts the HIP tracer, its occupancy model clamped to the
// AMD GPUs' compute units when gpu found them all alike.
func startHIPTrace(s settings, p providers) (xpuscope.Source, string, error) {
	opts := []hiptrace.Option{
		hiptrace.WithMeterProvider(p.meter),
		hiptrace.WithTracerProvider(p.tracer),
		hiptrace.WithProducer(p.hip),
		hiptrace.WithExitGrace(p.exitGrace),
		hiptrace.WithProcRoot(s.procRoot),
	}
	if s.amdCapacity != nil {
		opts = append(opts, hiptrace.WithDeviceCapacity(*s.amdCapacity, occupancy.CapacityKFD))
	}
	ring, why := ringFor(s.gpus, semconv.VendorAMD)
	if ring != 0 {
		opts = append(opts, hiptrace.WithRingBufferSize(ring))
	}
	if s.resolver != nil {
		opts = append(opts, hiptrace.WithResolver(s.resolver))
	}
	src, err := hiptrace.New(opts...)
	if err != nil {
		return nil, "", err
	}
	st := src.Status()
	return src, describeTrace(st.Attachments, st.Rejections, "HIP", why), nil
}

// idleRingBytes is the ring buffers of a runtime tracer when the node has
// GPUs, but none of its runtime's vendor: a process there has no device to
// launch work on. They hold about 3,000 calls of 80 bytes, split between
// the CPUs' lanes, which the reader empties every 50 ms, or when one is a
// quarter full: enough unless processes there make tens of thousands of
// calls a second, and what does not fit is counted as dropped. The
// default is 4 MiB, which costs its size in RSS once touched.
const idleRingBytes = 256 << 10

// ringFor returns the ring buffer size for the tracer of vendor's runtime,
// and why, or 0 for the tracer's default: where gpu found GPUs (gpus is not
// nil), but none of vendor.
func ringFor(gpus []gpu.Device, vendor string) (bytes uint32, why string) {
	if gpus == nil || slices.ContainsFunc(gpus, func(d gpu.Device) bool { return d.Vendor == vendor }) {
		return 0, ""
	}
	return idleRingBytes, fmt.Sprintf("ring buffer %d KiB, as the node has no %s GPU", idleRingBytes>>10, vendor)
}

// describeTrace says which of runtime's libraries (and in which
// processes) the probes are attached to, and which could not be probed;
// note, if any, comes first.
func describeTrace(attached []xpuscope.Attachment, rejected []xpuscope.Rejection, runtime, note string) string {
	var b strings.Builder
	if note != "" {
		b.WriteString(note + "; ")
	}
	if len(attached) == 0 {
		fmt.Fprintf(&b, "uprobes: no %s library mapped yet; new processes and dlopen are watched", runtime)
	} else {
		fmt.Fprintf(&b, "uprobes on %d file(s):", len(attached))
		for _, a := range attached {
			fmt.Fprintf(&b, " %s %s (pid %d, %d functions)", a.Target, a.Path, a.PID, len(a.Symbols))
		}
	}
	for _, r := range rejected {
		fmt.Fprintf(&b, "; not probed: %s %s (pid %d): %s", r.Target, r.Path, r.PID, r.Reason)
	}
	return b.String()
}

func startGPU(s settings, p providers) (xpuscope.Source, string, error) {
	opts := []gpu.Option{
		gpu.WithMeterProvider(p.meter),
		gpu.WithInterval(s.interval),
		gpu.WithNVMLLibraryPath(s.nvmlLibrary),
		gpu.WithProcRoot(s.procRoot),
	}
	if s.resolver != nil {
		opts = append(opts, gpu.WithResolver(s.resolver))
	}
	src, err := gpu.New(opts...)
	if err != nil {
		return nil, "", err
	}
	names := map[string][]string{} // by vendor
	var vendors []string
	instances := 0
	for _, d := range src.Devices() {
		if d.Parent != "" {
			instances++
			continue
		}
		if names[d.Vendor] == nil {
			vendors = append(vendors, d.Vendor)
		}
		names[d.Vendor] = append(names[d.Vendor], fmt.Sprintf("%d:%s", d.Index, d.Name))
	}
	var parts []string
	for _, v := range vendors {
		part := fmt.Sprintf("%s: %d GPU(s)", v, len(names[v]))
		if v == semconv.VendorNVIDIA {
			part += ", driver " + src.DriverVersion()
		}
		parts = append(parts, part+": "+strings.Join(names[v], ", "))
	}
	detail := strings.Join(parts, "; ")
	if instances > 0 {
		detail += fmt.Sprintf("; %d MIG instance(s)", instances)
	}
	return src, detail, nil
}

// startPMU counts the bytes the memory controllers move, every -interval,
// from the uncore PMUs; -check says what it counts and how completely, or
// exactly what is missing (a VM's PMUs, CAP_PERFMON).
func startPMU(s settings, p providers) (xpuscope.Source, string, error) {
	src, err := pmu.New(
		pmu.WithMeterProvider(p.meter),
		pmu.WithInterval(s.interval),
		pmu.WithProcRoot(s.procRoot),
	)
	if err != nil {
		return nil, "", err
	}
	return src, src.Status().Describe(), nil
}

type result struct {
	name   string
	state  state
	detail string
	src    xpuscope.Source
}

// commonCapacity is the capacity of every GPU of vendor when they are all
// alike and known, and none is split by MIG: then it holds for any device
// of that vendor's runtime a process may see.
func commonCapacity(devs []gpu.Device, vendor string) *occupancy.Capacity {
	var c *occupancy.Capacity
	for _, d := range devs {
		if d.Vendor != vendor {
			continue
		}
		if d.Parent != "" || d.SMs == 0 || d.ThreadsPerSM == 0 {
			return nil
		}
		dc := occupancy.Capacity{SMs: int32(d.SMs), ThreadsPerSM: int32(d.ThreadsPerSM)}
		if c != nil && *c != dc {
			return nil
		}
		c = &dc
	}
	return c
}

func startAll(s settings, p providers) []result {
	out := make([]result, 0, len(features))
	for _, f := range features {
		src, detail, err := f.start(s, p)
		switch src := src.(type) {
		case *podjoin.Resolver:
			s.resolver = src
		case *serving.Source:
			s.serving = src
		case *node.Source:
			s.node = src
		case *gpu.Source:
			s.gpus = src.Devices()
			s.nvidiaCapacity = commonCapacity(s.gpus, semconv.VendorNVIDIA)
			s.amdCapacity = commonCapacity(s.gpus, semconv.VendorAMD)
		}
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

// printCheck prints -check's lines: the platform, then one per feature.
func printCheck(w io.Writer, rs []result) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "platform\t%s/%s\t%s\n", runtime.GOOS, runtime.GOARCH, describePlatform())
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.name, r.state, r.detail)
		if g, ok := r.src.(*gpu.Source); ok {
			printGPUBackends(tw, g.Status())
		}
	}
	tw.Flush()
}

// printGPUBackends prints a gpu/<backend> line for each backend of the gpu
// Source: what it reads (DCGM's host engine and profiling fields, RDC's
// fields, the TPU runtime's ports), or why it does not.
func printGPUBackends(w io.Writer, st gpu.Status) {
	for _, b := range st.Backends {
		state, detail := unavailable, b.Detail
		if b.Active {
			state = active
			if detail == "" {
				detail = fmt.Sprintf("%d device(s)", b.Devices)
			}
		}
		fmt.Fprintf(w, "gpu/%s\t%s\t%s\n", b.Backend, state, detail)
	}
}

// closeAll closes the features in reverse start order: the Sources
// before the resolver they use.
func closeAll(rs []result, log *slog.Logger) {
	for _, r := range slices.Backward(rs) {
		if r.src == nil {
			continue
		}
		if err := r.src.Close(); err != nil {
			log.Error("close", "feature", r.name, "err", err)
		}
	}
}

// describePlatform says how the eBPF features read arguments and place
// probes on this architecture, and what they cannot probe.
func describePlatform() string {
	p, ok := bpfsource.ThisPlatform()
	if !ok {
		return "no BPF objects for this architecture"
	}
	return fmt.Sprintf("calling conventions: %s; probes: %s; %s", p.Conventions, p.Placement, p.Limits)
}
