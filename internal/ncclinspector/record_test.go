package ncclinspector

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The records of the NCCL Inspector's README (plugins/profiler/inspector/
// README.md of NVIDIA's NCCL repository, 2.30): its output example and its
// verbose one, each on one line as the Inspector writes them
// (inspector_json.cc prints no space and ends each record with a newline;
// the README pretty-prints them).
const (
	readmeRecord = `{"header":{"id":"0x7f8c496ae9f661","rank":2,"n_ranks":8,"nnodes":1},` +
		`"metadata":{"inspector_output_format_version":"v4.0","git_rev":"","rec_mechanism":"profiler_plugin",` +
		`"dump_timestamp_us":1748030377748202,"hostname":"example-hostname","pid":1639453},` +
		`"coll_perf":{"coll":"AllReduce","coll_sn":1407,"coll_msg_size_bytes":17179869184,"coll_exec_time_us":61974,` +
		`"coll_algobw_gbs":277.210914,"coll_busbw_gbs":485.119099}}`
	readmeVerbose = `{"header":{"id":"0xe62dedaa97644a","rank":4,"n_ranks":8,"nnodes":1},` +
		`"metadata":{"inspector_output_format_version":"v4.0","git_rev":"9019a1912-dirty","rec_mechanism":"nccl_profiler_interface",` +
		`"dump_timestamp_us":1752867229276385,"hostname":"example-hostname","pid":438776},` +
		`"coll_perf":{"coll":"ReduceScatter","coll_sn":1231,"coll_msg_size_bytes":2147483648,"coll_exec_time_us":41057,` +
		`"coll_timing_source":"kernel_gpu","coll_algobw_gbs":418.439467,"coll_busbw_gbs":366.134533,` +
		`"event_trace_sn":{"coll_start_sn":1,"coll_stop_sn":2,"kernel_events":[{"channel_id":0,"kernel_start_sn":3,"kernel_stop_sn":48,"kernel_record_sn":47}]},` +
		`"event_trace_ts":{"coll_start_ts":1752867229235059,"coll_stop_ts":1752867229235064,"kernel_events":[{"channel_id":0,` +
		`"kernel_start_ts":1752867229235181,"kernel_stop_ts":1752867229275811,"kernel_record_ts":1752867229275811}]}}}`
	// A send as inspector_json.cc writes p2p_perf (the README shows none),
	// with a NaN bandwidth as its writer prints one ("nan", a string),
	// and the comm_name header field of the current writer.
	p2pRecord = `{"header":{"id":"0x1","comm_name":"DP Group 0","rank":0,"n_ranks":2,"nnodes":1},` +
		`"metadata":{"inspector_output_format_version":"v4.0","git_rev":"","rec_mechanism":"nccl_profiler_interface",` +
		`"dump_timestamp_us":1,"hostname":"h","pid":7},` +
		`"p2p_perf":{"p2p":"Send","p2p_sn":3,"p2p_peer":1,"p2p_msg_size_bytes":536870912,"p2p_exec_time_us":1154,` +
		`"p2p_timing_source":"kernel_gpu","p2p_algobw_gbs":"nan","p2p_busbw_gbs":464.900000}}`
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		want Record
	}{
		{"the README's record", readmeRecord, Record{CommHash: 0x7f8c496ae9f661, Rank: 2, NRanks: 8, PID: 1639453,
			Op: "AllReduce", Seq: 1407, Bytes: 17179869184, ExecTime: 61974 * time.Microsecond,
			AlgoBW: 277.210914, BusBW: 485.119099, Peer: -1}},
		{"the README's verbose record", readmeVerbose, Record{CommHash: 0xe62dedaa97644a, Rank: 4, NRanks: 8, PID: 438776,
			Op: "ReduceScatter", Seq: 1231, Bytes: 2147483648, ExecTime: 41057 * time.Microsecond, TimingSource: "kernel_gpu",
			AlgoBW: 418.439467, BusBW: 366.134533, Peer: -1}},
		{"a send, its newline and spaces around", " " + p2pRecord + "\n", Record{CommHash: 1, Rank: 0, NRanks: 2, PID: 7, P2P: true,
			Op: "Send", Seq: 3, Bytes: 536870912, ExecTime: 1154 * time.Microsecond, TimingSource: "kernel_gpu",
			AlgoBW: math.NaN(), BusBW: 464.9, Peer: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Record
			require.NoError(t, Parse([]byte(tc.line), &r))
			if math.IsNaN(tc.want.AlgoBW) {
				assert.True(t, math.IsNaN(r.AlgoBW))
				r.AlgoBW, tc.want.AlgoBW = 0, 0
			}
			assert.Equal(t, tc.want, r)
		})
	}
}

func TestParseRejects(t *testing.T) {
	edit := func(from, to string) string {
		require.Contains(t, readmeRecord, from)
		return strings.Replace(readmeRecord, from, to, 1)
	}
	for name, line := range map[string]string{
		"empty":                "",
		"not JSON":             "nccl-inspector",
		"cut":                  readmeRecord[:len(readmeRecord)/2],
		"two records":          readmeRecord + readmeRecord,
		"an array":             "[" + readmeRecord + "]",
		"no header":            edit(`"header":{"id":"0x7f8c496ae9f661","rank":2,"n_ranks":8,"nnodes":1},`, ""),
		"an id without 0x":     edit(`"0x7f8c496ae9f661"`, `"7f8c496ae9f661"`),
		"an id of 0x alone":    edit(`"0x7f8c496ae9f661"`, `"0x"`),
		"an id past 64 bits":   edit(`"0x7f8c496ae9f661"`, `"0x17f8c496ae9f66100"`),
		"a rank past n_ranks":  edit(`"rank":2`, `"rank":8`),
		"a negative rank":      edit(`"rank":2`, `"rank":-1`),
		"no ranks":             edit(`"n_ranks":8`, `"n_ranks":0`),
		"no pid":               edit(`,"pid":1639453`, ""),
		"a string size":        edit(`17179869184`, `"17179869184"`),
		"a negative time":      edit(`61974`, `-1`),
		"a time past int64 ns": edit(`61974`, `18446744073709551615`),
		"no operation":         edit(`"coll":"AllReduce",`, ""),
		"no bandwidth":         edit(`,"coll_busbw_gbs":485.119099`, ""),
		"a negative bandwidth": edit(`485.119099`, `-1`),
		"a word bandwidth":     edit(`485.119099`, `"fast"`),
		"both perfs":           edit(`"coll_perf":`, `"p2p_perf":{"p2p":"Send"},"coll_perf":`),
		"neither perf":         edit(`"coll_perf":`, `"perf":`),
		"a peer past n_ranks":  strings.Replace(p2pRecord, `"p2p_peer":1`, `"p2p_peer":2`, 1),
		"a send without peer":  strings.Replace(p2pRecord, `"p2p_peer":1,`, "", 1),
		"too long":             readmeRecord[:len(readmeRecord)-1] + `,"pad":"` + strings.Repeat("x", MaxLine) + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			r := Record{Op: "untouched"}
			err := Parse([]byte(line), &r)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrNotRecord), "%v", err)
			assert.Equal(t, Record{Op: "untouched"}, r)
		})
	}
}

// FuzzParse: Parse never panics, and what it takes is a record within the
// bounds it promises.
func FuzzParse(f *testing.F) {
	for _, s := range []string{readmeRecord, readmeVerbose, p2pRecord, "", "{}", `{"header":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Record
		if err := Parse(b, &r); err != nil {
			return
		}
		if r.NRanks < 1 || r.Rank < 0 || r.Rank >= r.NRanks || r.PID < 1 || r.Op == "" || len(r.Op) > maxOpName ||
			r.ExecTime < 0 || (r.P2P && (r.Peer < 0 || r.Peer >= r.NRanks)) || (!r.P2P && r.Peer != -1) ||
			r.AlgoBW < 0 || r.BusBW < 0 || len(bytes.TrimSpace(b)) > MaxLine {
			t.Fatalf("Parse took %+v of %q", r, b)
		}
	})
}
