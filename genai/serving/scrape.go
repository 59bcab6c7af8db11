package serving

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/xpuscope/xpuscope/semconv"
)

// accept asks for the Prometheus text format first: its parser is the
// fast one. A server that answers OpenMetrics all the same is read as
// such, if its answer is small (maxOpenMetrics).
const accept = "text/plain;version=0.0.4;q=1,application/openmetrics-text;version=1.0.0;q=0.5,*/*;q=0.1"

// maxLine bounds a line of a Prometheus text exposition. Real lines are a
// few hundred bytes.
const maxLine = 64 << 10

// maxOpenMetrics and maxOpenMetricsLine bound an OpenMetrics answer, and
// its lines: expfmt's OpenMetrics parser parses each line against the
// format's grammar (goabnf), which upstream says is not meant for large
// or untrusted input. It took 15.7 s for 2,000 lines of 160 bytes on the
// machines these figures come from, where the text parser takes a few
// milliseconds. The servers read here all answer the text format when
// asked for it first; one that answers OpenMetrics anyway, with more,
// fails its scrape, counted as a parse error that says so.
const (
	maxOpenMetrics     = 8 << 10
	maxOpenMetricsLine = 2 << 10
)

// scrapeError is a failed scrape: its reason (a semconv.ScrapeError*
// value) and what happened.
type scrapeError struct {
	reason string
	err    error
}

func (e *scrapeError) Error() string { return e.reason + ": " + e.err.Error() }
func (e *scrapeError) Unwrap() error { return e.err }

func fail(reason string, format string, args ...any) *scrapeError {
	return &scrapeError{reason, fmt.Errorf(format, args...)}
}

// get fetches url with client, within the timeout ctx carries, into buf
// (reset first), at most limit bytes, and returns the answer's header.
func get(ctx context.Context, client *http.Client, url, acceptHeader string, limit int, buf *bytes.Buffer) (http.Header, *scrapeError) {
	buf.Reset()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fail(semconv.ScrapeErrorConnect, "%v", err)
	}
	req.Header.Set("Accept", acceptHeader)
	resp, err := client.Do(req)
	if err != nil {
		return nil, classify(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10) // so that the connection can be kept
		return nil, fail(semconv.ScrapeErrorStatus, "GET %s: %s", url, resp.Status)
	}
	if resp.ContentLength > int64(limit) {
		return nil, fail(semconv.ScrapeErrorTooLarge, "GET %s: the answer is %d bytes, over the cap of %d", url, resp.ContentLength, limit)
	}
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return nil, classify(ctx, err)
	}
	if n > int64(limit) {
		return nil, fail(semconv.ScrapeErrorTooLarge, "GET %s: the answer is over the cap of %d bytes", url, limit)
	}
	return resp.Header, nil
}

// classify names why a request failed.
func classify(ctx context.Context, err error) *scrapeError {
	var ns errNetNS
	var ne net.Error
	switch {
	case errors.As(err, &ns):
		return &scrapeError{semconv.ScrapeErrorNetNS, err}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		ctx.Err() != nil, errors.As(err, &ne) && ne.Timeout():
		return &scrapeError{semconv.ScrapeErrorTimeout, err}
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return &scrapeError{semconv.ScrapeErrorConnect, err}
	}
	return &scrapeError{semconv.ScrapeErrorConnect, err}
}

// parse reads an exposition in the format its header names: Prometheus
// text (also when it names none) or OpenMetrics.
func parse(header http.Header, body []byte) (map[string]*dto.MetricFamily, *scrapeError) {
	format := expfmt.ResponseFormat(header)
	if format.FormatType() == expfmt.TypeOpenMetrics {
		if len(body) > maxOpenMetrics {
			return nil, fail(semconv.ScrapeErrorParse, "an OpenMetrics answer of %d bytes, over the %d that expfmt's OpenMetrics parser is given (it is slow: the server ignored Accept: text/plain)", len(body), maxOpenMetrics)
		}
		if err := checkLines(body, maxOpenMetricsLine); err != nil {
			return nil, err
		}
		fams := map[string]*dto.MetricFamily{}
		dec := expfmt.NewDecoder(bytes.NewReader(body), format)
		for {
			f := &dto.MetricFamily{}
			err := dec.Decode(f)
			if errors.Is(err, io.EOF) {
				return fams, nil
			}
			if err != nil {
				return nil, &scrapeError{semconv.ScrapeErrorParse, err}
			}
			fams[f.GetName()] = f
		}
	}
	if err := checkLines(body, maxLine); err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, &scrapeError{semconv.ScrapeErrorParse, err}
	}
	return fams, nil
}

// checkLines refuses a body with a line longer than max bytes.
func checkLines(body []byte, max int) *scrapeError {
	for len(body) > max {
		i := bytes.IndexByte(body[:max+1], '\n')
		if i < 0 {
			return fail(semconv.ScrapeErrorParse, "a line is longer than %d bytes", max)
		}
		body = body[i+1:]
	}
	return nil
}
