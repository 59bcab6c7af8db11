package config

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xpuscope/xpuscope/genai"
)

// The checks below are shared by Load (which adds the position) and
// Validate (which adds the key path). Each says what was wrong.

var levels = map[string]slog.Level{
	"debug": slog.LevelDebug,
	"info":  slog.LevelInfo,
	"warn":  slog.LevelWarn,
	"error": slog.LevelError,
}

func parseLevel(s string) (slog.Level, error) {
	if l, ok := levels[strings.ToLower(s)]; ok {
		return l, nil
	}
	return 0, fmt.Errorf("want debug, info, warn or error, got %.64q", s)
}

func checkLevel(l slog.Level) error {
	switch l {
	case slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError:
		return nil
	}
	return fmt.Errorf("want debug, info, warn or error, got level %d", int(l))
}

func checkInterval(d time.Duration) error {
	if d < MinInterval || d > MaxInterval {
		return fmt.Errorf("interval %v is outside %v to %v", d, MinInterval, MaxInterval)
	}
	return nil
}

// checkListen accepts host:port with a numeric port (0 picks one).
func checkListen(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("want host:port (such as %q), got %.64q: %v", DefaultListen, s, err)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || port != strconv.FormatUint(p, 10) {
		return fmt.Errorf("want host:port with a port number 0 to 65535, got %.64q", s)
	}
	return nil
}

func checkProtocol(s string) error {
	switch s {
	case ProtocolGRPC, ProtocolHTTPProtobuf:
		return nil
	case "http/json":
		return errors.New(`protocol "http/json" is not supported (want grpc or http/protobuf)`)
	}
	return fmt.Errorf("want grpc or http/protobuf, got %.64q", s)
}

// endpointURL accepts an http:// or https:// URL with a host, and
// returns it parsed, or a host:port, for which it returns nil (grpc only;
// checkEndpointFor says so).
func endpointURL(s string) (*url.URL, error) {
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r == utf8.RuneError {
			return nil, fmt.Errorf("endpoint %.64q holds a space, control character or invalid UTF-8", s)
		}
	}
	if !strings.Contains(s, "://") {
		host, port, err := net.SplitHostPort(s)
		if err != nil || host == "" || !validPort(port) {
			return nil, fmt.Errorf("want an http:// or https:// URL or host:port, got %.64q", s)
		}
		return nil, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("endpoint is not a URL: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("endpoint %.64q: want scheme http or https, got %.16q", s, u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("endpoint %.64q has no host", s)
	}
	if p := u.Port(); p != "" && !validPort(p) {
		return nil, fmt.Errorf("endpoint %.64q: port %q is not 1 to 65535", s, p)
	}
	return u, nil
}

func checkEndpoint(s string) error {
	_, err := endpointURL(s)
	return err
}

func validPort(p string) bool {
	n, err := strconv.ParseUint(p, 10, 16)
	return err == nil && n > 0 && p == strconv.FormatUint(n, 10)
}

// checkEndpointFor checks an endpoint for a protocol and returns it
// parsed (nil for host:port).
func checkEndpointFor(endpoint, protocol string) (*url.URL, error) {
	u, err := endpointURL(endpoint)
	if err != nil {
		return nil, err
	}
	if protocol == ProtocolHTTPProtobuf && u == nil {
		return nil, fmt.Errorf("endpoint %.64q has no http:// or https:// scheme, which protocol http/protobuf needs", endpoint)
	}
	return u, nil
}

// checkHeader accepts an HTTP field name (RFC 9110 token) and a value
// without control characters other than tab.
func checkHeader(k, v string) error {
	if k == "" {
		return errors.New("empty header name")
	}
	for i := range len(k) {
		if !isTokenChar(k[i]) {
			return fmt.Errorf("header name %.64q: byte %q is not allowed in an HTTP field name", k, k[i])
		}
	}
	for i := range len(v) {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return fmt.Errorf("header %.64q: value holds control character %q", k, c)
		}
	}
	return nil
}

func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// checkAttr accepts a resource attribute: a name of printable UTF-8, a
// value of UTF-8 without control characters (the service name too).
func checkAttr(k, v string) error {
	if k == "" || !utf8.ValidString(k) || hasControl(k) || strings.ContainsAny(k, " ,=") {
		return fmt.Errorf("attribute name %.64q is empty, not UTF-8, or holds a space, comma, equals sign or control character", k)
	}
	if !utf8.ValidString(v) || hasControl(v) {
		return fmt.Errorf("attribute %.64q: value %.64q is not UTF-8 or holds a control character", k, v)
	}
	if k == "service.name" && v == "" {
		return errors.New("empty service name")
	}
	return nil
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			return true
		}
	}
	return false
}

// rateKey splits a cost_rates key "provider/model" at its first slash;
// provider "*" is any provider.
func rateKey(s string) (genai.RateKey, error) {
	p, m, ok := strings.Cut(s, "/")
	if !ok || p == "" || m == "" {
		return genai.RateKey{}, fmt.Errorf(`cost rate key %.64q is not "provider/model" (provider "*" for any)`, s)
	}
	if p == "*" {
		p = ""
	}
	return genai.RateKey{Provider: p, Model: m}, nil
}

func checkPrice(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("price %v is not a finite non-negative number", v)
	}
	return nil
}

// checkRate checks a whole entry the way genai.NewRates will.
func checkRate(k string, r Rate) error {
	key, err := rateKey(k)
	if err != nil {
		return err
	}
	_, err = genai.NewRates(map[genai.RateKey]genai.Price{key: {Input: r.Input, Output: r.Output, CachedInput: r.Cached, CacheWrite: r.Write}})
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "genai: "))
	}
	return nil
}

// hostEntry checks one providers entry the way genai.NewHostMap does and
// returns its normalised key.
func hostEntry(k, v string) (string, error) {
	m, err := genai.NewHostMap(map[string]string{k: v})
	if err != nil {
		return "", errors.New(strings.TrimPrefix(err.Error(), "genai: "))
	}
	return slices.Collect(maps.Keys(m))[0], nil
}

func checkBodyLimit(n int) error {
	if n < 1 || n > MaxCaptureBodyLimit {
		return fmt.Errorf("body limit %d bytes is outside 1 to %d", n, MaxCaptureBodyLimit)
	}
	return nil
}

func checkContentMax(n int, capture bool) error {
	lo := 0
	if capture {
		lo = 1
	}
	if n < lo || n > MaxContentMaxBytes {
		return fmt.Errorf("content cap %d bytes is outside %d to %d", n, lo, MaxContentMaxBytes)
	}
	return nil
}
