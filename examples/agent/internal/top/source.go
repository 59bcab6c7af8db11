package top

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// A Source gives top its scrapes: a running agent's Prometheus endpoint
// (HTTPSource), or the registry of the Sources top started itself
// (GathererSource).
type Source interface {
	// Scrape reads the metrics once. The Scrape is valid until the next
	// call: it may be a view of a buffer the next call reuses.
	Scrape(ctx context.Context) (Scrape, error)
	// String says where the metrics come from, for the status line.
	String() string
}

// Scrape is one reading of the metrics.
type Scrape struct {
	// At is when it was read; Bytes its size, where there is one.
	At    time.Time
	Bytes int
	// decode hands the scrape to a consumer.
	decode func(consumer) error
}

// ProtoScrape is a scrape in the length-delimited protobuf exposition.
func ProtoScrape(at time.Time, body []byte) Scrape {
	return Scrape{At: at, Bytes: len(body), decode: func(c consumer) error { return decodeDelimited(body, c) }}
}

// ExpfmtScrape is a scrape in format (the text format, OpenMetrics, or the
// protobuf exposition), decoded by expfmt.
func ExpfmtScrape(at time.Time, body []byte, format expfmt.Format) Scrape {
	return Scrape{At: at, Bytes: len(body), decode: func(c consumer) error {
		return decodeExpfmt(bytes.NewReader(body), format, c)
	}}
}

// DefaultBodyLimit is the largest scrape HTTPSource reads.
const DefaultBodyLimit = 64 << 20

// Accept asks for the protobuf exposition, which top decodes fastest, and
// takes the text format (and OpenMetrics) from an endpoint without it.
const accept = `application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.9,` +
	`text/plain;version=0.0.4;q=0.5,application/openmetrics-text;version=1.0.0;q=0.4,*/*;q=0.1`

// HTTPSource reads a Prometheus endpoint: the agent's /metrics.
type HTTPSource struct {
	url    string
	client *http.Client
	limit  int64
	buf    bytes.Buffer
}

// NewHTTPSource reads url, at most limit bytes a scrape.
func NewHTTPSource(url string, limit int64) *HTTPSource {
	return &HTTPSource{url: url, limit: limit, client: &http.Client{
		// Loopback needs no compression, and decompressing costs a
		// refresh time: ask for none.
		Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 1},
	}}
}

func (h *HTTPSource) String() string { return h.url }

// Scrape implements Source. Its time is bounded by ctx.
func (h *HTTPSource) Scrape(ctx context.Context) (Scrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url, nil)
	if err != nil {
		return Scrape{}, err
	}
	req.Header.Set("Accept", accept)
	resp, err := h.client.Do(req)
	if err != nil {
		return Scrape{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Scrape{}, fmt.Errorf("GET %s: %s", h.url, resp.Status)
	}
	h.buf.Reset()
	n, err := h.buf.ReadFrom(io.LimitReader(resp.Body, h.limit+1))
	if err != nil {
		return Scrape{}, fmt.Errorf("GET %s: reading the body: %w", h.url, err)
	}
	if n > h.limit {
		return Scrape{}, fmt.Errorf("GET %s: the scrape is larger than %d bytes", h.url, h.limit)
	}
	at := time.Now()
	body := h.buf.Bytes()
	format := expfmt.ResponseFormat(resp.Header)
	switch format.FormatType() {
	case expfmt.TypeProtoDelim:
		return ProtoScrape(at, body), nil
	case expfmt.TypeUnknown:
		// No content type, or one expfmt does not know: the text format
		// is what such endpoints serve.
		format = expfmt.NewFormat(expfmt.TypeTextPlain)
	}
	return ExpfmtScrape(at, body, format), nil
}

// GathererSource reads a registry: the Sources top started itself.
type GathererSource struct {
	g prometheus.Gatherer
}

// NewGathererSource reads g.
func NewGathererSource(g prometheus.Gatherer) *GathererSource { return &GathererSource{g} }

func (g *GathererSource) String() string { return "standalone" }

// Scrape implements Source.
func (g *GathererSource) Scrape(context.Context) (Scrape, error) {
	fams, err := g.g.Gather()
	if err != nil && len(fams) == 0 {
		return Scrape{}, err
	}
	return Scrape{At: time.Now(), decode: func(c consumer) error {
		decodeFamilies(fams, c)
		return nil
	}}, nil
}

// Refresher reads a Source and builds its Frames, one refresh at a time.
type Refresher struct {
	src     Source
	timeout time.Duration
	mu      sync.Mutex
	b       *builder
}

// NewRefresher reads src, each scrape bounded by timeout.
func NewRefresher(src Source, timeout time.Duration) *Refresher {
	return &Refresher{src: src, timeout: timeout, b: newBuilder()}
}

// ErrScrape wraps the errors of a scrape that could not be read or
// decoded.
var ErrScrape = errors.New("scrape")

// Refresh scrapes the Source and builds a Frame, with the rates since the
// last Refresh that succeeded. A second call waits for the first.
func (r *Refresher) Refresh(ctx context.Context) (*Frame, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	sc, err := r.src.Scrape(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScrape, err)
	}
	f, err := r.b.build(sc.At, sc.decode)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrScrape, r.src, err)
	}
	f.Bytes, f.Took = sc.Bytes, time.Since(start)
	return f, nil
}

// String says where the Refresher reads.
func (r *Refresher) String() string { return r.src.String() }
