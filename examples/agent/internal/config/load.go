package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Load reads the configuration file at path ("" for none), applies the
// OpenTelemetry environment variables that env looks up (os.LookupEnv in
// the agent; nil for none) and the defaults, as the package comment
// describes, and returns the result.
//
// Every problem found in the file and the environment is reported (up to
// 100, then their count), not only the first: the error joins one *Error
// per problem, each with the file, line and column, or the environment
// variable, and the key path. A file that cannot be read is the os
// error, wrapped.
func Load(path string, env func(string) (string, bool)) (Config, error) {
	var data []byte
	if path != "" {
		f, err := openRegular(path)
		if errors.Is(err, errNotRegular) {
			return Config{}, fmt.Errorf("read configuration %s: %w", path, err)
		}
		if err != nil {
			return Config{}, fmt.Errorf("read configuration: %w", err)
		}
		defer f.Close()
		data, err = io.ReadAll(io.LimitReader(f, MaxFileSize+1))
		if err != nil {
			return Config{}, fmt.Errorf("read configuration %s: %w", path, err)
		}
	}
	return load(path, data, env)
}

// maxProblems bounds the problems reported; a hostile file can hold
// hundreds of thousands.
const maxProblems = 100

// load is Load on the file's bytes; name is the file's name ("" for no
// file).
func load(name string, data []byte, env func(string) (string, bool)) (Config, error) {
	var file layer
	var errs []error
	if name != "" {
		file, errs = parseFile(name, data)
	}
	envLayer, envErrs := parseEnv(env)
	c, resErrs := resolve(file, envLayer)
	errs = append(append(errs, envErrs...), resErrs...)
	if len(errs) > maxProblems {
		more := &Error{File: name, Msg: fmt.Sprintf("%d more problems not shown", len(errs)-maxProblems)}
		errs = append(errs[:maxProblems], more)
	}
	if len(errs) > 0 {
		return Config{}, errors.Join(errs...)
	}
	return c, nil
}

// origin is where a setting was read: a place in the file or an
// environment variable.
type origin struct {
	file, env, key string
	line, col      int
}

func (o origin) errorf(format string, args ...any) *Error {
	return &Error{File: o.file, Line: o.line, Column: o.col, Env: o.env, Key: o.key, Msg: fmt.Sprintf(format, args...)}
}

// opt is a setting one source may or may not give.
type opt[T any] struct {
	v   T
	set bool
	at  origin
}

// first returns the first of os that is set, or the zero opt.
func first[T any](os ...opt[T]) opt[T] {
	for _, o := range os {
		if o.set {
			return o
		}
	}
	return opt[T]{}
}

// or returns o's value when set, else def.
func (o opt[T]) or(def T) T {
	if o.set {
		return o.v
	}
	return def
}

// layer is what one source (the file or the environment) sets.
type layer struct {
	logLevel    opt[slog.Level]
	serviceName opt[string]
	resource    map[string]string
	interval    opt[time.Duration]
	promEnabled opt[bool]
	promListen  opt[string]
	otlp        [3]otlpLayer // indexed by general, metrics, traces
	costRates   map[string]Rate
	priceFile   opt[string]
	providers   map[string]string
	bodyLimit   opt[int]
	goTLS       opt[bool]
	capture     opt[bool]
	contentMax  opt[int]
	serving     opt[bool]
	training    opt[bool]
	node        opt[bool]
}

// OTLP layers: the general settings and the per-signal ones.
const (
	general = iota
	metrics
	traces
)

var signalNames = [...]string{general: "", metrics: "metrics", traces: "traces"}

type otlpLayer struct {
	endpoint, protocol opt[string]
	headers            map[string]string
	insecure           opt[bool]
}

// resolve applies the precedence rule: file, then environment, then
// default, per setting and per map entry; per-signal OTLP settings over
// general ones.
func resolve(f, e layer) (Config, []error) {
	var errs []error
	c := Config{
		LogLevel: f.logLevel.or(slog.LevelInfo),
		Resource: map[string]string{},
	}
	envName := opt[string]{}
	if v, ok := e.resource["service.name"]; ok {
		envName = opt[string]{v: v, set: true}
	}
	c.ServiceName = first(f.serviceName, e.serviceName, envName).or(DefaultServiceName)
	maps.Copy(c.Resource, e.resource)
	delete(c.Resource, "service.name")
	maps.Copy(c.Resource, f.resource)

	c.Export.Interval = first(f.interval, e.interval).or(DefaultInterval)
	c.Export.Prometheus = Prometheus{
		Enabled: f.promEnabled.or(true),
		Listen:  f.promListen.or(DefaultListen),
	}
	seen := map[string]bool{}
	for _, sig := range []int{metrics, traces} {
		s, err := resolveSignal(sig, f.otlp, e.otlp)
		if err != nil && !seen[err.Error()] {
			// Both signals share the general endpoint: say it once.
			seen[err.Error()] = true
			errs = append(errs, err)
		}
		if sig == metrics {
			c.Export.OTLP.Metrics = s
		} else {
			c.Export.OTLP.Traces = s
		}
	}

	c.AIML.LLM = LLM{
		CostRates:        orEmpty(f.costRates),
		PriceFile:        f.priceFile.or(""),
		Providers:        orEmpty(f.providers),
		CaptureBodyLimit: f.bodyLimit.or(DefaultCaptureBodyLimit),
		CaptureGoTLS:     f.goTLS.or(true),
		Content: Content{
			Capture:  f.capture.or(false),
			MaxBytes: f.contentMax.or(DefaultContentMaxBytes),
		},
	}
	c.AIML.Serving = Serving{Enabled: f.serving.or(true)}
	c.AIML.Training = Training{Enabled: f.training.or(true)}
	c.AIML.Node = Node{Enabled: f.node.or(true)}
	return c, errs
}

func orEmpty[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

// resolveSignal resolves one signal's OTLP settings from the file's and
// the environment's general and per-signal layers.
func resolveSignal(sig int, f, e [3]otlpLayer) (OTLPSignal, *Error) {
	fs, es, fg, eg := f[sig], e[sig], f[general], e[general]
	proto := first(fs.protocol, es.protocol, fg.protocol, eg.protocol)
	s := OTLPSignal{Protocol: proto.or(DefaultProtocol), Headers: map[string]string{}}
	for _, h := range []map[string]string{eg.headers, fg.headers, es.headers, fs.headers} {
		maps.Copy(s.Headers, h)
	}
	ep := first(fs.endpoint, es.endpoint)
	perSignal := ep.set
	if !perSignal {
		ep = first(fg.endpoint, eg.endpoint)
	}
	if !ep.set {
		return s, nil
	}
	u, err := checkEndpointFor(ep.v, s.Protocol)
	if err != nil {
		hint := ""
		if !proto.set {
			hint = " (the default protocol; set protocol grpc for a host:port endpoint)"
		}
		return OTLPSignal{}, ep.at.errorf("%v%s", err, hint)
	}
	s.Endpoint = ep.v
	if u == nil {
		s.Insecure = first(fs.insecure, es.insecure, fg.insecure, eg.insecure).or(false)
		return s, nil
	}
	s.Insecure = u.Scheme == "http"
	if !perSignal && s.Protocol == ProtocolHTTPProtobuf {
		s.Endpoint = u.JoinPath("v1", signalNames[sig]).String()
	}
	return s, nil
}

// syntaxError reports what the YAML parser said. Its positions are not
// taken as the error's Line: go-yaml counts the lines of parser (as
// opposed to scanner) errors from 0, so the text keeps its own words.
func syntaxError(name string, err error) *Error {
	return &Error{File: name, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
}

// parseFile decodes the configuration file strictly.
func parseFile(name string, data []byte) (layer, []error) {
	if len(data) > MaxFileSize {
		return layer{}, []error{&Error{File: name, Msg: fmt.Sprintf("file is larger than %d bytes", MaxFileSize)}}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err == io.EOF {
		return layer{}, nil // empty, or only comments
	} else if err != nil {
		return layer{}, []error{syntaxError(name, err)}
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return layer{}, []error{&Error{File: name, Line: next.Line, Column: next.Column,
			Msg: "a second YAML document: the configuration is one document"}}
	case err != io.EOF:
		return layer{}, []error{syntaxError(name, err)}
	}
	d := &decoder{file: name}
	d.top(doc.Content[0])
	return d.l, d.errs
}

// decoder walks the document, checking every key and value against the
// schema, and fills a layer.
type decoder struct {
	file string
	l    layer
	errs []error
}

func (d *decoder) at(n *yaml.Node, key string) origin {
	return origin{file: d.file, line: n.Line, col: n.Column, key: key}
}

func (d *decoder) fail(n *yaml.Node, key, format string, args ...any) {
	d.errs = append(d.errs, d.at(n, key).errorf(format, args...))
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// describe says what a node is, for "want …, got …". Aliases are
// refused before anything is described.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch t := n.ShortTag(); t {
	case "!!str":
		return fmt.Sprintf("%.64q", n.Value)
	case "!!null":
		return "null"
	case "!!int", "!!float", "!!bool":
		return fmt.Sprintf("%.64s", n.Value)
	default:
		return fmt.Sprintf("%.32s %.64q", t, n.Value)
	}
}

// scalar reports whether n is a scalar with one of tags. A null or
// missing value is not, silently (an unset key); anything else is an
// error saying what was wanted.
func (d *decoder) scalar(n *yaml.Node, key, want string, tags ...string) bool {
	switch {
	case n.Kind == yaml.AliasNode:
		d.fail(n, key, "aliases (*%.64s) are not supported", n.Value)
		return false
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null":
		return false
	case n.Kind == yaml.ScalarNode:
		for _, t := range tags {
			if n.ShortTag() == t {
				return true
			}
		}
	}
	d.fail(n, key, "want %s, got %s", want, describe(n))
	return false
}

func (d *decoder) str(n *yaml.Node, key string, dst *opt[string], check func(string) error) {
	if !d.scalar(n, key, "a string", "!!str") {
		return
	}
	if check != nil {
		if err := check(n.Value); err != nil {
			d.fail(n, key, "%v", err)
			return
		}
	}
	*dst = opt[string]{v: n.Value, set: true, at: d.at(n, key)}
}

func (d *decoder) boolean(n *yaml.Node, key string, dst *opt[bool]) {
	if !d.scalar(n, key, "true or false", "!!bool") {
		return
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		d.fail(n, key, "want true or false, got %s", describe(n))
		return
	}
	*dst = opt[bool]{v: b, set: true, at: d.at(n, key)}
}

func (d *decoder) integer(n *yaml.Node, key string, dst *opt[int], check func(int) error) {
	if !d.scalar(n, key, "an integer", "!!int") {
		return
	}
	var v int
	if err := n.Decode(&v); err != nil {
		d.fail(n, key, "want an integer, got %s, which is not one in range", describe(n))
		return
	}
	if err := check(v); err != nil {
		d.fail(n, key, "%v", err)
		return
	}
	*dst = opt[int]{v: v, set: true, at: d.at(n, key)}
}

// number decodes a price.
func (d *decoder) number(n *yaml.Node, key string) (float64, bool) {
	if !d.scalar(n, key, "a number", "!!int", "!!float") {
		return 0, false
	}
	var v float64
	if err := n.Decode(&v); err != nil {
		d.fail(n, key, "want a number, got %s", describe(n))
		return 0, false
	}
	if err := checkPrice(v); err != nil {
		d.fail(n, key, "%v", err)
		return 0, false
	}
	return v, true
}

func (d *decoder) duration(n *yaml.Node, key string, dst *opt[time.Duration]) {
	if !d.scalar(n, key, `a duration such as "15s"`, "!!str") {
		return
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		d.fail(n, key, `want a duration such as "15s", got %s`, describe(n))
		return
	}
	if err := checkInterval(v); err != nil {
		d.fail(n, key, "%v", err)
		return
	}
	*dst = opt[time.Duration]{v: v, set: true, at: d.at(n, key)}
}

// field is one key of a mapping with a fixed set of keys.
type field struct {
	name   string
	decode func(v *yaml.Node, key string)
}

// entries calls each for every key of mapping n, in order, after
// checking the key is a scalar and not a repeat. A null n is empty.
func (d *decoder) entries(n *yaml.Node, path string, each func(k, v *yaml.Node, name string)) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		if n.Kind == yaml.AliasNode {
			d.fail(n, path, "aliases (*%.64s) are not supported", n.Value)
			return
		}
		d.fail(n, path, "want a mapping, got %s", describe(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case k.Kind == yaml.AliasNode:
			d.fail(k, path, "aliases (*%.64s) are not supported", k.Value)
			continue
		case k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null":
			d.fail(k, path, "want a key, got %s", describe(k))
			continue
		case k.ShortTag() == "!!merge":
			d.fail(k, path, "merge keys (<<) are not supported")
			continue
		}
		if line, dup := seen[k.Value]; dup {
			d.fail(k, path, "key %.64q given twice (first on line %d)", k.Value, line)
			continue
		}
		seen[k.Value] = k.Line
		each(k, v, k.Value)
	}
}

// object decodes a mapping whose keys are fields; any other key is an
// error listing the ones there are.
func (d *decoder) object(n *yaml.Node, path string, fields ...field) {
	d.entries(n, path, func(k, v *yaml.Node, name string) {
		for _, f := range fields {
			if f.name == name {
				f.decode(v, join(path, name))
				return
			}
		}
		if name == "gpu" {
			d.fail(k, path, `unknown key "gpu" (GPU detection is automatic; there are no per-feature GPU keys)`)
			return
		}
		names := make([]string, len(fields))
		for i, f := range fields {
			names[i] = f.name
		}
		d.fail(k, path, "unknown key %.64q (want one of: %s)", name, strings.Join(names, ", "))
	})
}

// stringMap decodes a mapping of user-chosen names to scalars, each
// value checked; values may be any non-null scalar when anyScalar, else
// strings only.
func (d *decoder) stringMap(n *yaml.Node, path string, anyScalar bool, check func(k, v string) error) map[string]string {
	m := map[string]string{}
	tags := []string{"!!str"}
	want := "a string"
	if anyScalar {
		tags = append(tags, "!!int", "!!float", "!!bool")
		want = "a string, number or boolean"
	}
	d.entries(n, path, func(k, v *yaml.Node, name string) {
		key := quoteKey(path, name)
		if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
			d.fail(v, key, "want %s, got %s", want, describe(v))
			return
		}
		if !d.scalar(v, key, want, tags...) {
			return
		}
		if err := check(name, v.Value); err != nil {
			d.fail(k, key, "%v", err)
			return
		}
		m[name] = v.Value
	})
	return m
}

func (d *decoder) top(root *yaml.Node) {
	l := &d.l
	d.object(root, "",
		field{"log_level", func(v *yaml.Node, key string) {
			if !d.scalar(v, key, "a string", "!!str") {
				return
			}
			if lv, err := parseLevel(v.Value); err != nil {
				d.fail(v, key, "%v", err)
			} else {
				l.logLevel = opt[slog.Level]{v: lv, set: true, at: d.at(v, key)}
			}
		}},
		field{"service_name", func(v *yaml.Node, key string) {
			d.str(v, key, &l.serviceName, func(s string) error { return checkAttr("service.name", s) })
		}},
		field{"resource", func(v *yaml.Node, key string) {
			l.resource = d.stringMap(v, key, true, func(k, v string) error {
				if k == "service.name" {
					return errors.New("set the service name with the top-level service_name key")
				}
				return checkAttr(k, v)
			})
		}},
		field{"export", d.export},
		field{"aiml", func(v *yaml.Node, key string) {
			d.object(v, key, field{"llm", d.llm}, field{"serving", func(v *yaml.Node, key string) {
				d.object(v, key, field{"enabled", func(v *yaml.Node, key string) { d.boolean(v, key, &l.serving) }})
			}}, field{"training", func(v *yaml.Node, key string) {
				d.object(v, key, field{"enabled", func(v *yaml.Node, key string) { d.boolean(v, key, &l.training) }})
			}}, field{"node", func(v *yaml.Node, key string) {
				d.object(v, key, field{"enabled", func(v *yaml.Node, key string) { d.boolean(v, key, &l.node) }})
			}})
		}},
	)
}

func (d *decoder) export(n *yaml.Node, path string) {
	l := &d.l
	d.object(n, path,
		field{"interval", func(v *yaml.Node, key string) { d.duration(v, key, &l.interval) }},
		field{"prometheus", func(v *yaml.Node, key string) {
			d.object(v, key,
				field{"enabled", func(v *yaml.Node, key string) { d.boolean(v, key, &l.promEnabled) }},
				field{"listen", func(v *yaml.Node, key string) { d.str(v, key, &l.promListen, checkListen) }},
			)
		}},
		field{"otlp", func(v *yaml.Node, key string) {
			fields := d.otlpFields(&l.otlp[general])
			for _, sig := range []int{metrics, traces} {
				fields = append(fields, field{signalNames[sig], func(v *yaml.Node, key string) {
					d.object(v, key, d.otlpFields(&l.otlp[sig])...)
				}})
			}
			d.object(v, key, fields...)
		}},
	)
}

func (d *decoder) otlpFields(o *otlpLayer) []field {
	return []field{
		{"endpoint", func(v *yaml.Node, key string) { d.str(v, key, &o.endpoint, checkEndpoint) }},
		{"protocol", func(v *yaml.Node, key string) { d.str(v, key, &o.protocol, checkProtocol) }},
		{"headers", func(v *yaml.Node, key string) { o.headers = d.stringMap(v, key, true, checkHeader) }},
		{"insecure", func(v *yaml.Node, key string) { d.boolean(v, key, &o.insecure) }},
	}
}

func (d *decoder) llm(n *yaml.Node, path string) {
	l := &d.l
	d.object(n, path,
		field{"cost_rates", d.costRates},
		field{"price_file", func(v *yaml.Node, key string) {
			d.str(v, key, &l.priceFile, nil)
			if p := l.priceFile.v; p != "" && !filepath.IsAbs(p) {
				l.priceFile.v = filepath.Join(filepath.Dir(d.file), p)
			}
		}},
		field{"providers", func(v *yaml.Node, key string) {
			seen := map[string]string{}
			l.providers = d.stringMap(v, key, false, func(k, v string) error {
				norm, err := hostEntry(k, v)
				if err != nil {
					return err
				}
				if prev, dup := seen[norm]; dup {
					return fmt.Errorf("same host as %.64q (both are %s)", prev, norm)
				}
				seen[norm] = k
				return nil
			})
		}},
		field{"capture_body_limit", func(v *yaml.Node, key string) {
			d.integer(v, key, &l.bodyLimit, checkBodyLimit)
		}},
		field{"capture_go_tls", func(v *yaml.Node, key string) { d.boolean(v, key, &l.goTLS) }},
		field{"content", func(v *yaml.Node, key string) {
			d.object(v, key,
				field{"capture", func(v *yaml.Node, key string) { d.boolean(v, key, &l.capture) }},
				field{"max_bytes", func(v *yaml.Node, key string) {
					d.integer(v, key, &l.contentMax, func(n int) error { return checkContentMax(n, true) })
				}},
			)
		}},
	)
}

func (d *decoder) costRates(n *yaml.Node, path string) {
	rates := map[string]Rate{}
	folded := map[string]string{}
	d.entries(n, path, func(k, v *yaml.Node, name string) {
		key := quoteKey(path, name)
		if _, err := rateKey(name); err != nil {
			d.fail(k, key, "%v", err)
			return
		}
		var r Rate
		var in, out bool
		price := func(dst *float64, given *bool) func(*yaml.Node, string) {
			return func(v *yaml.Node, key string) { *dst, *given = d.number(v, key) }
		}
		optPrice := func(dst **float64) func(*yaml.Node, string) {
			return func(v *yaml.Node, key string) {
				if p, ok := d.number(v, key); ok {
					*dst = &p
				}
			}
		}
		before := len(d.errs)
		d.object(v, key,
			field{"input_cost_per_1m", price(&r.Input, &in)},
			field{"output_cost_per_1m", price(&r.Output, &out)},
			field{"cached_input_cost_per_1m", optPrice(&r.Cached)},
			field{"cache_write_cost_per_1m", optPrice(&r.Write)},
		)
		if len(d.errs) > before {
			return
		}
		if !in || !out {
			d.fail(v, key, "want both input_cost_per_1m and output_cost_per_1m")
			return
		}
		if err := checkRate(name, r); err != nil {
			d.fail(k, key, "%v", err)
			return
		}
		if prev, dup := folded[strings.ToLower(name)]; dup {
			d.fail(k, key, "same key as %.64q but for case", prev)
			return
		}
		folded[strings.ToLower(name)] = name
		rates[name] = r
	})
	d.l.costRates = rates
}
