package config

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzLoad: any bytes load without a panic, into a Config that Validate
// accepts or into problems that are all *Errors naming the file; and
// loading is deterministic.
func FuzzLoad(f *testing.F) {
	full, err := os.ReadFile("testdata/full.yaml")
	require.NoError(f, err)
	f.Add(full)
	for _, s := range []string{
		"",
		"~\n",
		"gpu: {}\n",
		"export: {otlp: {endpoint: \"c:4317\", protocol: grpc, metrics: {endpoint: \"http://m:4318/x\"}}}\n",
		"aiml: {llm: {cost_rates: {\"a/b\": {input_cost_per_1m: .nan, output_cost_per_1m: -1}}}}\n",
		"aiml: {llm: {providers: {\"[::1]:8000\": openai, \"H:1\": x, \"h:1\": y}}}\n",
		"resource: &a {x: *a}\n",
		"a: 1\n---\nb: 2\n",
		"resource:\n  a: 1\n  a: 2\n",
		"export:\n  <<: {interval: 1s}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := load("fuzz.yaml", data, nil)
		if err == nil {
			require.NoError(t, c.Validate(), "Load accepted what Validate refuses:\n%s", data)
			_, err := c.AIML.LLM.HostMap()
			require.NoError(t, err)
			if c.AIML.LLM.PriceFile == "" {
				_, err := c.AIML.LLM.Rates()
				require.NoError(t, err)
			}
		} else {
			for _, p := range problems(t, err) {
				require.Equal(t, "fuzz.yaml", p.File, "%v", p)
				require.NotEmpty(t, p.Msg)
			}
		}
		c2, err2 := load("fuzz.yaml", data, nil)
		assert.Equal(t, c, c2)
		assert.Equal(t, err, err2)
	})
}
