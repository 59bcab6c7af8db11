package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"
	"go.opentelemetry.io/otel"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/examples/agent/internal/config"
	"github.com/xpuscope/xpuscope/examples/agent/internal/top"
	"github.com/xpuscope/xpuscope/gpu"
)

// topOptions are the flags of agent top.
type topOptions struct {
	addr       string
	configPath string
	standalone bool
	once       bool
	view       string
	width      int
	refresh    time.Duration
	timeout    time.Duration
	settings
}

func parseTopFlags(args []string, stderr io.Writer) (topOptions, error) {
	var o topOptions
	fs := flag.NewFlagSet("agent top", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agent top [flags]\n\n"+
			"A live view of the node's GPUs, GPU processes, LLM calls, model servers and training jobs,\n"+
			"read from the agent running on the node (its Prometheus endpoint), or, with no agent\n"+
			"there or with -standalone, from the Sources started in this process.\n\nFlags:")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.addr, "addr", "", "the agent's Prometheus endpoint, host:port or a URL (default: the configuration's export.prometheus.listen, on loopback); given, top reads only it")
	fs.StringVar(&o.configPath, "config", "", "the agent's YAML configuration file (optional): its endpoint, and the settings of -standalone's Sources")
	fs.BoolVar(&o.standalone, "standalone", false, "start the Sources in this process instead of reading an agent")
	fs.BoolVar(&o.once, "once", false, "print one frame of every view (or -view) as plain text and exit; two scrapes, -refresh apart, for the rates")
	fs.StringVar(&o.view, "view", "", "the view to show first (with -once: the only one): gpus, processes, llm, servers or training")
	fs.IntVar(&o.width, "width", 160, "-once: the width of the text, in columns")
	fs.DurationVar(&o.refresh, "refresh", 2*time.Second, "time between refreshes")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Second, "how long a scrape may take before the view calls its data stale")
	fs.DurationVar(&o.interval, "interval", gpu.DefaultInterval, "-standalone: how often polled sources read their devices")
	fs.StringVar(&o.nvmlLibrary, "nvml-library", gpu.DefaultNVMLLibrary, "-standalone: NVML library to load")
	fs.StringVar(&o.procRoot, "proc-root", "/proc", "-standalone: where the host's procfs is mounted")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	switch {
	case o.refresh <= 0:
		return o, fmt.Errorf("-refresh must be positive, got %v", o.refresh)
	case o.timeout <= 0:
		return o, fmt.Errorf("-timeout must be positive, got %v", o.timeout)
	case o.width < 40:
		return o, fmt.Errorf("-width must be at least 40, got %d", o.width)
	case o.standalone && o.addr != "":
		return o, errors.New("-standalone and -addr are exclusive")
	}
	if o.view != "" {
		if _, err := top.ParseView(o.view); err != nil {
			return o, fmt.Errorf("-view: %w", err)
		}
	}
	return o, nil
}

// metricsURL is the URL of the agent's endpoint: addr (a URL, or
// host:port) or, when it is empty, the configured listen address, where
// an unspecified host is reached on loopback.
func metricsURL(addr, listen string) (string, error) {
	if strings.Contains(addr, "://") {
		u, err := url.Parse(addr)
		if err != nil {
			return "", fmt.Errorf("-addr: %w", err)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/metrics"
		}
		return u.String(), nil
	}
	if addr == "" {
		addr = listen
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("the agent's address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/metrics", nil
}

// runTop is agent top; it returns the exit status.
func runTop(ctx context.Context, args []string, stdout, stderr io.Writer, interactive bool) int {
	o, err := parseTopFlags(args, stderr)
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
	var views []top.View
	if o.view != "" {
		v, _ := top.ParseView(o.view)
		views = []top.View{v}
	} else {
		for v := top.ViewGPUs; v <= top.ViewTraining; v++ {
			views = append(views, v)
		}
	}

	var src top.Source
	var reasons map[string]string
	if !o.standalone {
		listen := cfg.Export.Prometheus.Listen
		if listen == "" {
			listen = config.DefaultListen
		}
		u, err := metricsURL(o.addr, listen)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		hs := top.NewHTTPSource(u, top.DefaultBodyLimit)
		src = hs
		if o.addr == "" && noAgent(ctx, hs, o.timeout) {
			fmt.Fprintf(stderr, "top: no agent at %s: starting the Sources in this process\n", u)
			o.standalone = true
		}
	}
	if o.standalone {
		// The Sources log what they do; on a terminal that top draws, the
		// log goes nowhere (-once keeps it on stderr).
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		if o.once {
			log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		}
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("opentelemetry", "err", err) }))
		// Standalone reads the Sources for this screen only: nothing is
		// pushed over OTLP, whatever the configuration says.
		cfg.Export.OTLP = config.OTLP{}
		tel, err := newTelemetry(ctx, cfg)
		if err != nil {
			fmt.Fprintf(stderr, "telemetry: %v\n", err)
			return 1
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = tel.shutdown(sctx)
		}()
		results := startAll(o.settings, providers{meter: tel.meter, tracer: tel.tracer, cuda: tel.cuda, hip: tel.hip,
			serving: tel.serving, exitGrace: tel.exitGrace})
		defer closeAll(results, log)
		if err := tel.observeSelf(results); err != nil {
			fmt.Fprintf(stderr, "self-metrics: %v\n", err)
			return 1
		}
		reasons = map[string]string{}
		for _, r := range results {
			reasons[r.name] = r.detail
		}
		src = top.NewGathererSource(tel.registry)
	}
	ref := top.NewRefresher(src, o.timeout)

	if o.once {
		return topOnce(ctx, ref, o, views, reasons, stdout, stderr)
	}
	if !interactive {
		fmt.Fprintln(stderr, "top: standard input and output are not a terminal: use -once for a frame in plain text")
		return 2
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := top.New(top.Options{Refresher: ref, Interval: o.refresh, Reasons: reasons, View: views[0], Context: ctx})
	p := tea.NewProgram(m, tea.WithContext(ctx))
	// Bubble Tea quits on SIGINT and SIGTERM, restoring the terminal; a
	// hang-up does the same.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		select {
		case <-hup:
			p.Quit()
		case <-ctx.Done():
		}
	}()
	if _, err := p.Run(); err != nil && !errors.Is(err, tea.ErrInterrupted) {
		fmt.Fprintf(stderr, "top: %v\n", err)
		return 1
	}
	return 0
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// noAgent reports whether nothing listens at the agent's address: a
// refused connection. An agent that answers badly or late is an agent.
func noAgent(ctx context.Context, src top.Source, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := src.Scrape(ctx)
	return errors.Is(err, syscall.ECONNREFUSED)
}

// topOnce prints one frame: two refreshes, o.refresh apart, so that the
// rates are there.
func topOnce(ctx context.Context, ref *top.Refresher, o topOptions, views []top.View, reasons map[string]string, stdout, stderr io.Writer) int {
	if _, err := ref.Refresh(ctx); err != nil {
		fmt.Fprintf(stderr, "top: %v\n", err)
		return 1
	}
	select {
	case <-time.After(o.refresh):
	case <-ctx.Done():
		return 1
	}
	f, err := ref.Refresh(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "top: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "xpuscope top: %s, %s\n\n", ref, f.At.Format(time.RFC3339))
	fmt.Fprint(stdout, top.Once(f, views, o.width, reasons))
	return 0
}
