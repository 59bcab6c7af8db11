package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Environment variables read by Load (the OpenTelemetry SDK ones).
const (
	EnvServiceName        = "OTEL_SERVICE_NAME"
	EnvResourceAttributes = "OTEL_RESOURCE_ATTRIBUTES"
	EnvMetricInterval     = "OTEL_METRIC_EXPORT_INTERVAL"
	// EnvOTLPPrefix begins OTEL_EXPORTER_OTLP_{ENDPOINT,PROTOCOL,
	// HEADERS,INSECURE} and their per-signal forms
	// OTEL_EXPORTER_OTLP_{METRICS,TRACES}_….
	EnvOTLPPrefix = "OTEL_EXPORTER_OTLP_"
)

// parseEnv reads the OpenTelemetry environment variables. An empty (or
// all-space) value is the same as none, as the specification says.
func parseEnv(lookup func(string) (string, bool)) (layer, []error) {
	var l layer
	var errs []error
	get := func(name string) (string, origin, bool) {
		if lookup == nil {
			return "", origin{}, false
		}
		v, ok := lookup(name)
		v = strings.TrimSpace(v)
		return v, origin{env: name}, ok && v != ""
	}
	if v, at, ok := get(EnvServiceName); ok {
		if err := checkAttr("service.name", v); err != nil {
			errs = append(errs, at.errorf("%v", err))
		} else {
			l.serviceName = opt[string]{v: v, set: true, at: at}
		}
	}
	if v, at, ok := get(EnvResourceAttributes); ok {
		m, bad := parseList(v, false, checkAttr)
		for _, err := range bad {
			errs = append(errs, at.errorf("%v", err))
		}
		l.resource = m
	}
	if v, at, ok := get(EnvMetricInterval); ok {
		ms, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil:
			errs = append(errs, at.errorf("want milliseconds as a whole number, got %.64q", v))
		case ms < 0 || ms > int64(MaxInterval/time.Millisecond):
			errs = append(errs, at.errorf("interval %dms is outside %v to %v", ms, MinInterval, MaxInterval))
		default:
			d := time.Duration(ms) * time.Millisecond
			if err := checkInterval(d); err != nil {
				errs = append(errs, at.errorf("%v", err))
			} else {
				l.interval = opt[time.Duration]{v: d, set: true, at: at}
			}
		}
	}
	for _, sig := range []int{general, metrics, traces} {
		prefix := EnvOTLPPrefix
		if sig != general {
			prefix += strings.ToUpper(signalNames[sig]) + "_"
		}
		o := &l.otlp[sig]
		if v, at, ok := get(prefix + "ENDPOINT"); ok {
			if err := checkEndpoint(v); err != nil {
				errs = append(errs, at.errorf("%v", err))
			} else {
				o.endpoint = opt[string]{v: v, set: true, at: at}
			}
		}
		if v, at, ok := get(prefix + "PROTOCOL"); ok {
			if err := checkProtocol(v); err != nil {
				errs = append(errs, at.errorf("%v", err))
			} else {
				o.protocol = opt[string]{v: v, set: true, at: at}
			}
		}
		if v, at, ok := get(prefix + "HEADERS"); ok {
			m, bad := parseList(v, true, checkHeader)
			for _, err := range bad {
				errs = append(errs, at.errorf("%v", err))
			}
			o.headers = m
		}
		if v, at, ok := get(prefix + "INSECURE"); ok {
			switch strings.ToLower(v) {
			case "true":
				o.insecure = opt[bool]{v: true, set: true, at: at}
			case "false":
				o.insecure = opt[bool]{v: false, set: true, at: at}
			default:
				errs = append(errs, at.errorf("want true or false, got %.64q", v))
			}
		}
	}
	return l, errs
}

// parseList parses the key=value,key=value lists of
// OTEL_RESOURCE_ATTRIBUTES and OTEL_EXPORTER_OTLP_HEADERS (the W3C
// Baggage form): space around keys and values is dropped, values are
// percent-decoded (and keys too when decodeKeys, as for headers), and a
// later entry for a key replaces an earlier one. An entry that is empty,
// has no "=", or fails check is a problem, and is left out.
func parseList(s string, decodeKeys bool, check func(k, v string) error) (map[string]string, []error) {
	m := map[string]string{}
	var errs []error
	for i, entry := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(entry, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if strings.TrimSpace(entry) == "" {
			errs = append(errs, fmt.Errorf("entry %d is empty (a stray comma?)", i+1))
			continue
		}
		if !ok {
			// Not echoed: a header entry may be a secret.
			errs = append(errs, fmt.Errorf("entry %d is not key=value", i+1))
			continue
		}
		if decodeKeys {
			dk, err := url.PathUnescape(k)
			if err != nil {
				errs = append(errs, fmt.Errorf("entry %d: key %.64q is not percent-encoded right: %v", i+1, k, err))
				continue
			}
			k = dk
		}
		dv, err := url.PathUnescape(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("entry %d, %.64q: value is not percent-encoded right (a %% must begin %%XX)", i+1, k))
			continue
		}
		if err := check(k, dv); err != nil {
			errs = append(errs, fmt.Errorf("entry %d: %v", i+1, err))
			continue
		}
		m[k] = dv
	}
	return m, errs
}
