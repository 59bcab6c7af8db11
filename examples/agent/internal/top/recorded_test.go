package top

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protodelim"
)

// recording is the two scrapes of the agent that
// TestTopRecordedFromTheAgent (examples/agent) wrote, 2 s apart: the
// agent with the fake NVML's two GPUs, cudaprog's late program launching
// saxpy every 2 ms on the real libcudart, streamed LLM calls over TLS to
// the mock, a fake vLLM server; and whatever else ran CUDA on the
// machine then (other tests' short "runtime" programs).
type recording struct {
	text    [2][]byte
	at      [2]time.Time
	latePID int64
}

func loadRecording(t testing.TB) recording {
	t.Helper()
	var r recording
	dir := filepath.Join("testdata", "agent")
	for i := range r.text {
		b, err := os.ReadFile(filepath.Join(dir, "scrape"+strconv.Itoa(i+1)+".prom"))
		require.NoError(t, err)
		r.text[i] = b
	}
	meta, err := os.ReadFile(filepath.Join(dir, "meta.txt"))
	require.NoError(t, err)
	sc := bufio.NewScanner(bytes.NewReader(meta))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		switch k {
		case "at1", "at2":
			at, err := time.Parse(time.RFC3339Nano, v)
			require.NoError(t, err)
			r.at[k[2]-'1'] = at
		case "late":
			r.latePID, err = strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
		}
	}
	require.False(t, r.at[0].IsZero() || r.at[1].IsZero() || r.latePID == 0, "meta.txt: %s", meta)
	return r
}

// toProto re-encodes a text scrape in the length-delimited protobuf
// exposition, as the agent answers top.
func toProto(t testing.TB, text []byte) []byte {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	require.NoError(t, err)
	names := make([]string, 0, len(fams))
	for k := range fams {
		names = append(names, k)
	}
	slices.Sort(names)
	var out bytes.Buffer
	for _, name := range names {
		_, err := protodelim.MarshalTo(&out, fams[name])
		require.NoError(t, err)
	}
	return out.Bytes()
}

// scrapes are the recording's scrapes in the protobuf exposition.
func (r recording) scrapes(t testing.TB) []Scrape {
	return []Scrape{ProtoScrape(r.at[0], toProto(t, r.text[0])), ProtoScrape(r.at[1], toProto(t, r.text[1]))}
}

// textScrapes are the recording's scrapes in the text format, decoded by
// expfmt.
func (r recording) textScrapes() []Scrape {
	text := expfmt.NewFormat(expfmt.TypeTextPlain)
	return []Scrape{ExpfmtScrape(r.at[0], r.text[0], text), ExpfmtScrape(r.at[1], r.text[1], text)}
}

// frames builds two Frames of scrapes.
func frames(t testing.TB, scrapes []Scrape) (*Frame, *Frame) {
	t.Helper()
	ref := NewRefresher(&replay{scrapes: scrapes}, time.Second)
	f1, err := ref.Refresh(context.Background())
	require.NoError(t, err)
	f2, err := ref.Refresh(context.Background())
	require.NoError(t, err)
	return f1, f2
}

// replay is a Source of scrapes, in turn; past the last, a Scrape waits
// for its context to end (an agent that stopped answering).
type replay struct {
	mu      sync.Mutex
	scrapes []Scrape
	calls   int
	// called, if set, is told each call's number as it starts.
	called chan int
}

func (r *replay) String() string { return "recorded" }

func (r *replay) Scrape(ctx context.Context) (Scrape, error) {
	r.mu.Lock()
	r.calls++
	n := r.calls
	r.mu.Unlock()
	if r.called != nil {
		r.called <- n
	}
	if n > len(r.scrapes) {
		<-ctx.Done()
		return Scrape{}, ctx.Err()
	}
	return r.scrapes[n-1], nil
}

// The README's example of -once is what Once prints of the recording.
func TestOnceAsTheREADMEShowsIt(t *testing.T) {
	r := loadRecording(t)
	_, f := frames(t, r.scrapes(t))
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "README.md"))
	require.NoError(t, err)
	once := Once(f, []View{ViewLLM}, 100, nil)
	want := strings.Join(strings.Split(once, "\n")[:3], "\n") + "\n"
	require.Contains(t, string(readme), "$ agent top -once -view llm -width 100\n")
	require.Contains(t, string(readme), want, "Once prints:\n%s", once)
}
