package top

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// recorder is a consumer that writes down everything it is handed.
type recorder struct{ b strings.Builder }

func (r *recorder) family(name string, typ dto.MetricType, n int) bool {
	fmt.Fprintf(&r.b, "F %q %v %d\n", name, typ, n)
	return true
}

func (r *recorder) series(s *series) {
	fmt.Fprintf(&r.b, "S %q %v %v %v %v %v\n", s.labels, s.value, s.count, s.sum, s.bounds, s.cum)
}

// expfmtProto decodes a length-delimited protobuf exposition with
// expfmt, family by family, into c.
func expfmtProto(b []byte, c consumer) error {
	dec := expfmt.NewDecoder(bytes.NewReader(b), expfmt.NewFormat(expfmt.TypeProtoDelim))
	var fams []*dto.MetricFamily
	for {
		f := new(dto.MetricFamily)
		err := dec.Decode(f)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		fams = append(fams, f)
	}
	decodeFamilies(fams, c)
	return nil
}

// seeds are the first families of each recorded scrape, a kilobyte or so
// (with seeds of 8 KB, the fuzzer here ran a few inputs and then none),
// and two small inputs.
func seeds(f *testing.F) [][]byte {
	r := loadRecording(f)
	var out [][]byte
	for _, p := range [][]byte{toProto(f, r.text[0]), toProto(f, r.text[1])} {
		var cut []byte
		for rest := p; len(rest) > 0 && len(cut) < 1<<10; {
			n, l := protowire.ConsumeVarint(rest)
			cut = append(cut, rest[:l+int(n)]...)
			rest = rest[l+int(n):]
		}
		out = append(out, cut)
	}
	return append(out, []byte{}, []byte{0x05, 0x0a, 0x01, 'a', 0x18, 0x04})
}

// FuzzDecodeDelimited: on any input, decodeDelimited never panics, and
// it refuses an input or hands over no more series than it has bytes.
// (Whether it answers as expfmt does is TestDecodersAgreeOnRandomFamilies':
// with expfmt's decoder in the fuzz target, the fuzzer here ran a few
// inputs and then none, though each of them decoded at once alone.)
func FuzzDecodeDelimited(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c counter
		if err := decodeDelimited(b, &c); err == nil {
			require.LessOrEqual(t, c.n, len(b))
		}
	})
}

// counter counts the series it is handed.
type counter struct{ n int }

func (c *counter) family(string, dto.MetricType, int) bool { return true }
func (c *counter) series(*series)                          { c.n++ }

// randomFamilies makes families of every type with random names, labels
// (some repeated, empty or not UTF-8-clean), values (NaN and infinities
// among them) and buckets (+Inf or not).
func randomFamilies(rnd *rand.Rand) []*dto.MetricFamily {
	strs := []string{"", "a", "process_pid", "hw_id", "é", "x\ny", "\"q\"", "0", "cuda_kernel_name", strings.Repeat("k", 300)}
	vals := []float64{0, 1, -1, 0.5, 1e300, math.NaN(), math.Inf(1), math.Inf(-1), 42}
	str := func() string { return strs[rnd.IntN(len(strs))] }
	// Names are mostly valid ones: expfmt refuses the rest.
	names := []string{"a", "process_pid", "hw_id", "cuda_kernel_name", "le_x"}
	name := func() string {
		if rnd.IntN(20) == 0 {
			return str()
		}
		return names[rnd.IntN(len(names))]
	}
	val := func() float64 { return vals[rnd.IntN(len(vals))] }
	types := []dto.MetricType{dto.MetricType_COUNTER, dto.MetricType_GAUGE, dto.MetricType_UNTYPED, dto.MetricType_HISTOGRAM,
		dto.MetricType_SUMMARY, dto.MetricType_GAUGE_HISTOGRAM}
	var out []*dto.MetricFamily
	for range 1 + rnd.IntN(6) {
		typ := types[rnd.IntN(len(types))]
		f := &dto.MetricFamily{Name: proto.String("fam_" + name()), Type: typ.Enum()}
		for range rnd.IntN(5) {
			m := &dto.Metric{}
			for range rnd.IntN(5) {
				m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(name()), Value: proto.String(str())})
			}
			switch typ {
			case dto.MetricType_COUNTER:
				m.Counter = &dto.Counter{Value: proto.Float64(val())}
			case dto.MetricType_GAUGE:
				m.Gauge = &dto.Gauge{Value: proto.Float64(val())}
			case dto.MetricType_UNTYPED:
				m.Untyped = &dto.Untyped{Value: proto.Float64(val())}
			case dto.MetricType_SUMMARY:
				m.Summary = &dto.Summary{SampleCount: proto.Uint64(3), SampleSum: proto.Float64(val())}
			default:
				h := &dto.Histogram{SampleSum: proto.Float64(val())}
				if rnd.IntN(2) == 0 {
					h.SampleCount = proto.Uint64(uint64(rnd.IntN(100)))
				} else {
					h.SampleCountFloat = proto.Float64(val())
				}
				bound := -1.0
				for range rnd.IntN(6) {
					bound += rnd.Float64() * 10
					h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(bound), CumulativeCount: proto.Uint64(uint64(rnd.IntN(100)))})
				}
				if rnd.IntN(2) == 0 {
					h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(math.Inf(1)), CumulativeCountFloat: proto.Float64(val())})
				}
				m.Histogram = h
			}
			f.Metric = append(f.Metric, m)
		}
		out = append(out, f)
	}
	return out
}

// The two decoders hand over the same families and series: on 2,000
// random expositions and on the recording.
func TestDecodersAgreeOnRandomFamilies(t *testing.T) {
	rnd := rand.New(rand.NewPCG(24, 1))
	compared := 0
	check := func(b []byte) {
		t.Helper()
		var ours, theirs recorder
		err := decodeDelimited(b, &ours)
		// expfmt checks names too (a name must be the classic
		// Prometheus's), so it refuses some that ours reads.
		if expfmtProto(b, &theirs) != nil {
			return
		}
		compared++
		require.NoError(t, err)
		require.Equal(t, theirs.b.String(), ours.b.String())
	}
	for range 2000 {
		var b bytes.Buffer
		for _, f := range randomFamilies(rnd) {
			_, err := protodelim.MarshalTo(&b, f)
			require.NoError(t, err)
		}
		check(b.Bytes())
	}
	require.Greater(t, compared, 200, "expositions both decoders read")
	r := loadRecording(t)
	n := compared
	check(toProto(t, r.text[0]))
	require.Equal(t, n+1, compared, "expfmt refused the recording")
}

// FuzzBuild: any protobuf exposition, built twice into Frames and
// rendered, never panics; the builder keeps no more than its input holds.
func FuzzBuild(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ref := NewRefresher(&replay{scrapes: []Scrape{ProtoScrape(time.Unix(1, 0), b), ProtoScrape(time.Unix(2, 0), b)}}, time.Second)
		for range 2 {
			if f, err := ref.Refresh(context.Background()); err == nil {
				require.LessOrEqual(t, len(f.Processes)+len(f.GPUs)+len(f.LLM)+len(f.Servers), f.Series, "a row with no series")
				Once(f, []View{ViewGPUs, ViewProcesses, ViewLLM, ViewServers, ViewTraining}, 80, nil)
			}
		}
		require.LessOrEqual(t, len(ref.b.st.index), len(b), "the builder keeps more than its input holds")
	})
}

// FuzzText: any text scrape, decoded by expfmt, builds Frames and renders
// them without a panic.
func FuzzText(f *testing.F) {
	r := loadRecording(f)
	for _, text := range r.text {
		// Its first lines, a kilobyte or so (see seeds).
		if i := bytes.IndexByte(text[1<<10:], '\n'); i >= 0 {
			f.Add(text[:1<<10+i+1])
		}
	}
	f.Add([]byte("# TYPE hw_gpu_utilization_ratio gauge\nhw_gpu_utilization_ratio{hw_id=\"x\"} NaN\n"))
	text := expfmt.NewFormat(expfmt.TypeTextPlain)
	f.Fuzz(func(t *testing.T, b []byte) {
		ref := NewRefresher(&replay{scrapes: []Scrape{ExpfmtScrape(time.Unix(1, 0), b, text), ExpfmtScrape(time.Unix(3, 0), b, text)}}, time.Second)
		for range 2 {
			if f, err := ref.Refresh(context.Background()); err == nil {
				m := New(Options{Refresher: ref, Interval: time.Second, Now: func() time.Time { return f.At }})
				m.Update(frameMsg{f: f})
				for v := range numViews {
					m.switchTo(v)
					m.Render()
				}
			}
		}
	})
}
