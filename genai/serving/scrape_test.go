package serving

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/semconv"
)

var openMetrics = http.Header{"Content-Type": []string{"application/openmetrics-text; version=1.0.0; charset=utf-8"}}

// A small OpenMetrics answer is parsed by expfmt's OpenMetrics parser:
// its counters' _total samples, its EOF; its families map as the text
// format's do.
func TestParseOpenMetrics(t *testing.T) {
	body := `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 4.0
# TYPE vllm:prompt_tokens counter
# HELP vllm:prompt_tokens Number of prefill tokens processed.
vllm:prompt_tokens_total{model_name="m"} 18210.0
vllm:prompt_tokens_created{model_name="m"} 1.7e+09
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 3.0
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 4.0
vllm:time_to_first_token_seconds_count{model_name="m"} 4.0
vllm:time_to_first_token_seconds_sum{model_name="m"} 0.9
# EOF
`
	fams, err := parse(openMetrics, []byte(body))
	require.Nil(t, err)
	var m mapping
	v := values{lim: testLimits()}
	mapFamilies(&vllmProfile, fams, "", &v, &m)
	assertValue(t, &m, &semconv.XpuscopeGenAIServerRunningRequests, "m", 4)
	assertValue(t, &m, &semconv.XpuscopeGenAIServerTokens, "m", 18210, input)
	assertHist(t, &m, &semconv.GenAIServerTimeToFirstToken, "m", []float64{0.1}, []uint64{3, 1}, 0.9)
}

// A large OpenMetrics answer is refused at once, saying why, rather than
// handed to a parser that takes seconds for it.
func TestParseOpenMetricsTooLarge(t *testing.T) {
	var b strings.Builder
	b.WriteString("# TYPE vllm:num_requests_running gauge\n")
	for b.Len() < 64<<10 {
		b.WriteString(`vllm:num_requests_running{model_name="m",engine="` + strings.Repeat("7", 80) + `"} 1` + "\n")
	}
	b.WriteString("# EOF\n")
	start := time.Now()
	_, err := parse(openMetrics, []byte(b.String()))
	require.NotNil(t, err)
	assert.Equal(t, semconv.ScrapeErrorParse, err.reason)
	assert.Contains(t, err.Error(), "ignored Accept: text/plain")
	assert.Less(t, time.Since(start), time.Second, "refused without parsing")
	long := "# TYPE x gauge\nx{a=\"" + strings.Repeat("y", 4<<10) + "\"} 1\n# EOF\n"
	_, err = parse(openMetrics, []byte(long))
	require.NotNil(t, err)
	assert.Contains(t, err.Error(), "a line is longer than 2048 bytes")
}

func TestParseText(t *testing.T) {
	_, err := parse(http.Header{}, []byte("garbage {{{\n"))
	require.NotNil(t, err, "no Content-Type: the text format")
	assert.Equal(t, semconv.ScrapeErrorParse, err.reason)
	_, err = parse(http.Header{}, []byte("x{a=\""+strings.Repeat("y", maxLine)+"\"} 1\n"))
	require.NotNil(t, err)
	assert.Contains(t, err.Error(), "a line is longer than 65536 bytes")
}
