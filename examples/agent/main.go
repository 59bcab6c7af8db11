// Command agent is xpuscope's reference agent. It starts every Source the
// library has, with auto-detection and no configuration file needed, and
// serves the metrics in Prometheus text format on :9464/metrics; with an
// OTLP endpoint configured it pushes metrics and spans there too. The pod
// resolver (podjoin) starts first: gpu, cudatrace and genai put pods on
// their series and spans through it.
//
//	agent                     run until SIGINT or SIGTERM
//	agent -check              print what each feature could turn on, then exit
//	agent -duration 10s       run 10s, print the final metrics to stdout, exit
//	agent -config agent.yaml  read the optional configuration file
//	agent top                 a live view of the node, read from the agent running on it
//
// The configuration file and the OTEL_* environment variables are
// checked in full before anything starts (package
// examples/agent/internal/config; testdata/full.yaml there shows every
// key); a bad one is reported with its line and the agent exits with
// status 2. A feature whose library, device, kernel feature or privilege
// is missing is unavailable: the agent says why and runs without it. Any
// other start-up error is a fault, and the agent exits with status 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"

	"github.com/xpuscope/xpuscope/examples/agent/internal/config"
	"github.com/xpuscope/xpuscope/gpu"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	listen     string
	listenSet  bool // -listen was given: it wins over the file
	configPath string
	check      bool
	duration   time.Duration
	settings
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.listen, "listen", config.DefaultListen, `address of the Prometheus endpoint /metrics, over the file's; "" turns it off`)
	fs.StringVar(&o.configPath, "config", "", "YAML configuration file (optional; see examples/agent/internal/config/testdata/full.yaml)")
	fs.BoolVar(&o.check, "check", false, "print one line per feature (active, unavailable or fault, with the reason) and exit; non-zero only on a fault")
	fs.DurationVar(&o.duration, "duration", 0, "run this long, print the final metrics in Prometheus text to stdout, and exit")
	fs.DurationVar(&o.interval, "interval", gpu.DefaultInterval, "how often polled sources read their devices")
	fs.StringVar(&o.nvmlLibrary, "nvml-library", gpu.DefaultNVMLLibrary, "NVML library to load (a path, for drivers outside the loader path)")
	fs.StringVar(&o.procRoot, "proc-root", "/proc", "where the host's procfs is mounted")
	fs.StringVar(&o.intelptTrigger, "intelpt-trigger", "", `unix socket that takes Intel PT capture requests (docs/intelpt.md); "" (the default) leaves Intel PT off`)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	fs.Visit(func(f *flag.Flag) { o.listenSet = o.listenSet || f.Name == "listen" })
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if o.duration < 0 {
		return o, fmt.Errorf("-duration must not be negative, got %v", o.duration)
	}
	return o, nil
}

// run is the whole agent; it returns the exit status.
// startupMemoryLimit is the soft limit on the Go runtime's memory while
// the features start: above the ~10 MB the agent's runtime holds once
// started, so that the collector runs only on start-up's garbage.
const startupMemoryLimit = 24 << 20

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "top" {
		return runTop(ctx, args[1:], stdout, stderr, isTerminal(os.Stdin) && isTerminal(os.Stdout))
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, err)
		return 2
	}

	cfg, err := config.Load(o.configPath, os.LookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "configuration: %v\n", err)
		return 2
	}
	if err := o.settings.fromConfig(cfg); err != nil {
		fmt.Fprintf(stderr, "configuration: %v\n", err)
		return 2
	}
	if !o.listenSet && cfg.Export.Prometheus.Enabled {
		o.listen = cfg.Export.Prometheus.Listen
	} else if !o.listenSet {
		o.listen = ""
	}
	log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	logOTelErrors(log)

	tel, err := newTelemetry(ctx, cfg)
	if err != nil {
		log.Error("telemetry", "err", err)
		return 1
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tel.shutdown(sctx); err != nil {
			log.Warn("shut down exporters", "err", err)
		}
	}()
	// Start-up decodes the kernel's BTF for each BPF object and reads the
	// ELF tables of every mapped file, garbage that would pile up between
	// collections to twice the agent's steady memory: a soft limit makes
	// the runtime collect it as it goes, for start-up only (an operator's
	// GOMEMLIMIT stands).
	limit := debug.SetMemoryLimit(-1)
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(startupMemoryLimit)
	}
	results := startAll(o.settings, providers{meter: tel.meter, tracer: tel.tracer, cuda: tel.cuda, hip: tel.hip,
		serving: tel.serving, exitGrace: tel.exitGrace})
	debug.SetMemoryLimit(limit)
	defer closeAll(results, log)
	if o.check {
		printCheck(stdout, results)
		if faulted(results) {
			return 1
		}
		return 0
	}
	if err := tel.observeSelf(results); err != nil {
		log.Error("self-metrics", "err", err)
		return 1
	}
	for _, r := range results {
		switch r.state {
		case active:
			log.Info("feature active", "feature", r.name, "detail", r.detail)
		case unavailable:
			log.Info("feature unavailable", "feature", r.name, "reason", r.detail)
		case fault:
			log.Error("feature fault", "feature", r.name, "err", r.detail)
		}
	}
	if faulted(results) {
		return 1
	}
	// Start-up leaves garbage (the kernel's BTF, decoded for each BPF
	// object; ELF tables read in process discovery) that the Go runtime
	// would return to the system only over minutes: return it now. It is
	// a few MB of the agent's RSS (BenchmarkFootprint).
	debug.FreeOSMemory()

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	if o.listen != "" {
		ln, err := net.Listen("tcp", o.listen)
		if err != nil {
			log.Error("listen", "addr", o.listen, "err", err)
			return 1
		}
		srv := &http.Server{
			Handler:           metricsMux(tel.registry),
			ReadHeaderTimeout: 5 * time.Second,
		}
		go srv.Serve(ln)
		defer srv.Close()
		log.Info("serving Prometheus metrics", "addr", ln.Addr().String(), "path", "/metrics")
	}
	<-ctx.Done()
	if o.duration > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		if err := writeText(stdout, tel.registry); err != nil {
			log.Error("print metrics", "err", err)
			return 1
		}
	}
	return 0
}

func metricsMux(g prometheus.Gatherer) *http.ServeMux {
	mux := http.NewServeMux()
	// OpenMetrics carries the exemplars that link histogram buckets to
	// trace ids; Prometheus asks for it when exemplar storage is on.
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	return mux
}

// writeText prints everything g gathers in the Prometheus text format.
func writeText(w io.Writer, g prometheus.Gatherer) error {
	families, err := g.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	return nil
}
