package ncclinspector

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/semconv"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// TestParsePromFile reads the fixtures of both label sets (each says in
// its header where it comes from) into the samples they hold.
func TestParsePromFile(t *testing.T) {
	nan := math.NaN()
	allReduce229 := PromSample{Format: PromComm, CommHash: 0xd152c00f111816, Rank: 4, NRanks: 8, Op: "AllReduce", Seq: 228924,
		SizeRange: "2-3GB", ExecTime: 7747e-6, BusBW: 485.119e9, AlgoBW: 277.211e9}
	for _, tc := range []struct {
		file string
		want []PromSample
	}{
		{"prom-2.29.prom", []PromSample{allReduce229,
			{Format: PromComm, CommHash: 0x7f8c496ae9f661, Rank: 0, NRanks: 2, Op: "ReduceScatter", Seq: 17,
				SizeRange: "8-9KB", ExecTime: 1.41, BusBW: 0.00617285e9, AlgoBW: 0.0123457e9}}},
		{"prom-2.29-readme.prom", []PromSample{allReduce229}},
		{"prom-2.30.prom", []PromSample{
			{Format: PromBuckets, Rank: -1, NRanks: 4, Op: "AllReduce", SizeRange: "4-5GB", Algorithm: "Ring", Protocol: "LL",
				ExecTime: 9498.47e-6, BusBW: 678.263e9, AlgoBW: nan},
			{Format: PromBuckets, Rank: -1, NRanks: 4, Op: "Send", P2P: true, SizeRange: "512-513MB",
				ExecTime: 1154.87e-6, BusBW: 464.9e9, AlgoBW: nan},
			{Format: PromBuckets, Rank: -1, NRanks: 16, Op: "AllGather", SizeRange: "8-9KB", Algorithm: "NVLSTree", Protocol: "Simple",
				ExecTime: 1.23457, BusBW: 0, AlgoBW: nan},
			{Format: PromBuckets, Rank: -1, NRanks: 16, Op: "Broadcast", SizeRange: "0B", ExecTime: 3e-6, BusBW: 0, AlgoBW: nan},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, bad := ParsePromFile(readFixture(t, tc.file), nil)
			assert.Zero(t, bad)
			require.Len(t, got, len(tc.want))
			for i, w := range tc.want {
				assertSample(t, w, got[i])
			}
		})
	}
}

// assertSample compares samples, NaN equal to NaN and figures to 1e-9 of
// their size (they went through a product).
func assertSample(t *testing.T, want, got PromSample) {
	t.Helper()
	for _, f := range []struct {
		name string
		w, g *float64
	}{{"ExecTime", &want.ExecTime, &got.ExecTime}, {"BusBW", &want.BusBW, &got.BusBW}, {"AlgoBW", &want.AlgoBW, &got.AlgoBW}} {
		if math.IsNaN(*f.w) {
			assert.True(t, math.IsNaN(*f.g), "%s: %v, want NaN", f.name, *f.g)
		} else {
			assert.InEpsilon(t, *f.w+1e-300, *f.g+1e-300, 1e-9, f.name)
		}
		*f.w, *f.g = 0, 0
	}
	assert.Equal(t, want, got)
}

// TestParsePromFileRejects: what is not a sample of the Inspector's is
// counted and not taken, and does not cost the other lines of its file.
func TestParsePromFileRejects(t *testing.T) {
	good := string(readFixture(t, "prom-2.29-readme.prom"))
	const labels229 = `comm_id="0x1",rank="0",nranks="2",collective="AllReduce",coll_sn="1",message_size="1.00MB"`
	const labels230 = `nranks="4",collective="AllReduce",message_size="1-2MB",algo_proto="Ring_LL"`
	sample := func(labels string) string {
		return "nccl_bus_bandwidth_gbs{" + labels + "} 10\nnccl_collective_exec_time_microseconds{" + labels + "} 100\n"
	}
	edit := func(labels, from, to string) string {
		require.Contains(t, labels, from)
		return sample(strings.Replace(labels, from, to, 1))
	}
	for name, tc := range map[string]struct {
		text string
		bad  int
	}{
		"a line that does not parse":  {`nccl_bus_bandwidth_gbs{comm_name="a "quoted" name"} 1` + "\n", 1},
		"no value":                    {`nccl_bus_bandwidth_gbs{comm_id="0x1"}` + "\n", 1},
		"no execution time":           {"nccl_bus_bandwidth_gbs{" + labels229 + "} 10\n", 1},
		"a negative time":             {"nccl_collective_exec_time_microseconds{" + labels229 + "} -1\n", 1},
		"an infinite time":            {"nccl_collective_exec_time_microseconds{" + labels229 + "} +Inf\n", 1},
		"a negative bandwidth":        {"nccl_bus_bandwidth_gbs{" + labels229 + "} -3\nnccl_collective_exec_time_microseconds{" + labels229 + "} 1\n", 1},
		"an id without 0x":            {edit(labels229, `"0x1"`, `"1"`), 1},
		"an id past 64 bits":          {edit(labels229, `"0x1"`, `"0x10000000000000000"`), 1},
		"a rank past nranks":          {edit(labels229, `rank="0"`, `rank="2"`), 1},
		"no rank":                     {edit(labels229, `rank="0",`, ``), 1},
		"no size":                     {edit(labels229, `nranks="2",`, ``), 1},
		"a size of 0":                 {edit(labels229, `nranks="2"`, `nranks="0"`), 1},
		"a sequence number of a word": {edit(labels229, `coll_sn="1"`, `coll_sn="one"`), 1},
		"a message size of a word":    {edit(labels229, `"1.00MB"`, `"big"`), 1},
		"no operation":                {edit(labels229, `collective="AllReduce",`, ``), 1},
		"a range with no upper bound": {edit(labels230, `"1-2MB"`, `"1MB"`), 1},
		"a range of 2":                {edit(labels230, `"1-2MB"`, `"1-3MB"`), 1},
		"a range past 1023":           {edit(labels230, `"1-2MB"`, `"1024-1025MB"`), 1},
		"a range of no unit":          {edit(labels230, `"1-2MB"`, `"1-2"`), 1},
		"a range of leading zeros":    {edit(labels230, `"1-2MB"`, `"01-2MB"`), 1},
		"a collective and a p2p time": {"nccl_collective_exec_time_microseconds{" + labels230 + "} 1\nnccl_p2p_exec_time_microseconds{" + labels230 + "} 1\n", 1},
		"a gauge's line with a timestamp, and another metric: taken, skipped": {
			"other_metric{a=\"1\"} 5\nnccl_collective_exec_time_microseconds{" + labels230 + "} 1 1700000000\n", 0},
		"a line too long": {"nccl_collective_exec_time_microseconds{comm_name=\"" + strings.Repeat("x", MaxPromLine) + "\"} 1\n", 1},
	} {
		t.Run(name, func(t *testing.T) {
			got, bad := ParsePromFile([]byte(good+tc.text), nil)
			assert.Equal(t, tc.bad, bad)
			require.NotEmpty(t, got)
			assert.Equal(t, uint64(0xd152c00f111816), got[0].CommHash, "the good sample before it")
			if tc.bad == 0 {
				assert.Len(t, got, 2)
			} else {
				assert.Len(t, got, 1)
			}
		})
	}
}

func TestParsePromFileBounds(t *testing.T) {
	var b strings.Builder
	for i := range MaxPromSamples + 10 {
		b.WriteString(`nccl_collective_exec_time_microseconds{nranks="2",collective="AllReduce",message_size="` +
			strings.Repeat("1", 1+i%3) + `-` + strings.Repeat("1", 1+i%3)[:0] + `x"} 1` + "\n")
	}
	// Distinct label sets, each a sample: past MaxPromSamples they count.
	b.Reset()
	for i := range MaxPromSamples + 10 {
		b.WriteString(`nccl_collective_exec_time_microseconds{nranks="` + itoa(1+i) + `",collective="AllReduce"} 1` + "\n")
	}
	got, bad := ParsePromFile([]byte(b.String()), nil)
	assert.Len(t, got, MaxPromSamples)
	assert.Equal(t, 10, bad)
	big := strings.Repeat("# pad\n", MaxPromFile/6+1) + "nccl_collective_exec_time_microseconds{nranks=\"2\",collective=\"AllReduce\"} 1\n"
	got, bad = ParsePromFile([]byte(big), nil)
	assert.Empty(t, got, "past MaxPromFile bytes")
	assert.Equal(t, 1, bad)
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + formatInt(i)) }

func formatInt(i int) string {
	if i == 0 {
		return "0"
	}
	var d []byte
	for ; i > 0; i /= 10 {
		d = append([]byte{byte('0' + i%10)}, d...)
	}
	return string(d)
}

func TestSizeRange(t *testing.T) {
	for in, want := range map[string]string{
		"0B": "0B", "1B": "1-2B", "1023B": "1023-1024B", "1.00KB": "1-2KB", "8.50KB": "8-9KB",
		"1023.99KB": "1023-1024KB", "1024.00KB": "1-2MB", "2.00GB": "2-3GB", "0.50TB": "1-2TB", "4096.00TB": "4096-4097TB",
	} {
		got, ok := sizeRange(in)
		assert.True(t, ok, in)
		assert.Equal(t, want, got, in)
		assert.True(t, validRange(got), "%s: %s is a range of 2.30's", in, got)
	}
	for _, in := range []string{"", "B", "KB", "-1B", "1.5", "x1MB", "1e3MB", "NaNGB", "InfKB", "+1MB", "20000B", "1024B", "1.5B", "1024.01MB"} {
		_, ok := sizeRange(in)
		assert.False(t, ok, in)
	}
}

func TestAlgoProto(t *testing.T) {
	for in, want := range map[string][2]string{
		"Ring_LL": {"Ring", "LL"}, "Ring_ll": {"Ring", "LL"}, "NVLSTree_Simple": {"NVLSTree", "Simple"},
		"CollNetDirect_LL128": {"CollNetDirect", "LL128"}, "PAT_Simple": {"PAT", "Simple"}, "unknown_unknown": {"", ""},
		"Ring_unknown": {"Ring", ""}, "Mesh_LL": {semconv.Other, "LL"}, "Tree_LL256": {"Tree", semconv.Other},
		"unknown": {"", ""}, "": {"", ""}, "Ring": {semconv.Other, semconv.Other},
	} {
		a, p := algoProto(in)
		assert.Equal(t, want, [2]string{a, p}, in)
	}
}

// FuzzParsePromFile: any text parses without a panic, into at most
// MaxPromSamples samples that are within the bounds ParsePromFile
// promises, with bounded attribute values.
func FuzzParsePromFile(f *testing.F) {
	for _, name := range []string{"prom-2.29.prom", "prom-2.29-readme.prom", "prom-2.30.prom"} {
		f.Add(readFixture(f, name))
	}
	f.Add([]byte("nccl_collective_exec_time_microseconds{nranks=\"1\",collective=\"X\",message_size=\"1-2TB\",algo_proto=\"a_b\"} 0\n"))
	f.Add([]byte("\n\n#\n{}"))
	algos := append(append([]string{"", semconv.Other}, ncclAlgorithms...), ncclProtocols...)
	f.Fuzz(func(t *testing.T, b []byte) {
		got, bad := ParsePromFile(b, nil)
		if len(got) > MaxPromSamples || bad < 0 {
			t.Fatalf("%d samples, %d bad", len(got), bad)
		}
		for _, s := range got {
			ok := s.NRanks >= 1 && s.NRanks <= maxRanks && s.Op != "" && len(s.Op) <= maxOpName &&
				s.ExecTime >= 0 && !math.IsInf(s.ExecTime, 0) && !(s.BusBW < 0) && !(s.AlgoBW < 0) &&
				!math.IsInf(s.BusBW, 0) && !math.IsInf(s.AlgoBW, 0) &&
				(s.SizeRange == "" || validRange(s.SizeRange)) && len(s.SizeRange) <= 16
			switch s.Format {
			case PromComm:
				ok = ok && s.Rank >= 0 && s.Rank < s.NRanks && s.Algorithm == "" && s.Protocol == ""
			case PromBuckets:
				ok = ok && s.Rank == -1 && s.CommHash == 0
			default:
				ok = false
			}
			if !ok || !contains(algos, s.Algorithm) || !contains(algos, s.Protocol) {
				t.Fatalf("ParsePromFile took %+v of %q", s, b)
			}
		}
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
