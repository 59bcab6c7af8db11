package podjoin

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

func TestParseTraceparent(t *testing.T) {
	const (
		tid = "0af7651916cd43dd8448eb211c80319c"
		sid = "b7ad6b7169203331"
	)
	for _, tc := range []struct {
		name, tp, ts string
		valid        bool
		flags        trace.TraceFlags
		state        string
	}{
		{"sampled", "00-" + tid + "-" + sid + "-01", "", true, trace.FlagsSampled, ""},
		{"not sampled", "00-" + tid + "-" + sid + "-00", "", true, 0, ""},
		{"random flag (level 2)", "00-" + tid + "-" + sid + "-03", "", true, trace.FlagsSampled | trace.FlagsRandom, ""},
		{"reserved flag in version 00", "00-" + tid + "-" + sid + "-09", "", false, 0, ""},
		{"with tracestate", "00-" + tid + "-" + sid + "-01", "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", true, trace.FlagsSampled, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"},
		{"bad tracestate is dropped, traceparent kept", "00-" + tid + "-" + sid + "-01", "not a list member", true, trace.FlagsSampled, ""},
		{"future version, more fields", "cc-" + tid + "-" + sid + "-01-and-more", "", true, trace.FlagsSampled, ""},
		{"future version, exact length", "01-" + tid + "-" + sid + "-01", "", true, trace.FlagsSampled, ""},
		{"future version, unknown flags ignored", "01-" + tid + "-" + sid + "-ff", "", true, trace.FlagsSampled | trace.FlagsRandom, ""},
		{"future version, no dash after flags", "01-" + tid + "-" + sid + "-01x", "", false, 0, ""},
		{"version ff", "ff-" + tid + "-" + sid + "-01", "", false, 0, ""},
		{"version 00 with extra field", "00-" + tid + "-" + sid + "-01-x", "", false, 0, ""},
		{"upper-case trace id", "00-" + strings.ToUpper(tid) + "-" + sid + "-01", "", false, 0, ""},
		{"upper-case version", "0A-" + tid + "-" + sid + "-01", "", false, 0, ""},
		{"all-zero trace id", "00-" + strings.Repeat("0", 32) + "-" + sid + "-01", "", false, 0, ""},
		{"all-zero parent id", "00-" + tid + "-" + strings.Repeat("0", 16) + "-01", "", false, 0, ""},
		{"short trace id", "00-" + tid[1:] + "-" + sid + "-01", "", false, 0, ""},
		{"not hex", "00-" + tid[:31] + "g-" + sid + "-01", "", false, 0, ""},
		{"spaces", " 00-" + tid + "-" + sid + "-01", "", false, 0, ""},
		{"empty", "", "rojo=1", false, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := ParseTraceparent(tc.tp, tc.ts)
			require.Equal(t, tc.valid, sc.IsValid(), "valid")
			if !tc.valid {
				require.True(t, sc.Equal(trace.SpanContext{}), "invalid traceparent gave %+v", sc)
				return
			}
			require.Equal(t, tid, sc.TraceID().String(), "trace id")
			require.Equal(t, sid, sc.SpanID().String(), "span id")
			require.True(t, sc.IsRemote(), "remote")
			require.Equal(t, tc.flags, sc.TraceFlags(), "flags %02x, want %02x", byte(sc.TraceFlags()), byte(tc.flags))
			require.Equal(t, tc.state, sc.TraceState().String(), "state")
		})
	}
}

func TestParseResourceAttributes(t *testing.T) {
	s := attribute.String
	for _, tc := range []struct {
		name, in string
		want     []attribute.KeyValue
		err      string
	}{
		{"plain", "a=1,b=2", []attribute.KeyValue{s("a", "1"), s("b", "2")}, ""},
		{"spaces and tabs trimmed", " a = 1 ,\tb=2\t", []attribute.KeyValue{s("a", "1"), s("b", "2")}, ""},
		{"percent-decoding", "team=ml%2Cinfra,eq=a%3Db,sp=a%20b,plus=a+b,utf=%C3%A9", []attribute.KeyValue{
			s("team", "ml,infra"), s("eq", "a=b"), s("sp", "a b"), s("plus", "a+b"), s("utf", "é")}, ""},
		{"encoded key", "my%2Ckey=v", []attribute.KeyValue{s("my,key", "v")}, ""},
		{"last value wins at the first position", "a=1,b=2,a=3", []attribute.KeyValue{s("a", "3"), s("b", "2")}, ""},
		{"empty members skipped", ",a=1,, ,b=2,", []attribute.KeyValue{s("a", "1"), s("b", "2")}, ""},
		{"empty value", "a=", []attribute.KeyValue{s("a", "")}, ""},
		{"bad UTF-8 replaced", "a=%FF", []attribute.KeyValue{s("a", "\uFFFD")}, ""},
		{"empty", "", nil, ""},
		{"missing '=' discards all", "a=1,b", nil, "member 2 has no '='"},
		{"empty key discards all", "a=1,=2", nil, "member 2 has an empty key"},
		{"bad escape in value discards all", "a=1,b=%zz", nil, "member 2: value"},
		{"bad escape in key discards all", "a%=1", nil, "member 1: key"},
		{"truncated escape", "a=%4", nil, "member 1: value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseResourceAttributes(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.ErrorContains(t, err, EnvResourceAttributes)
				require.Nil(t, got, "want nil and an error with %q", tc.err)
				return
			}
			require.NoError(t, err)
			require.True(t, equalKVs(got, tc.want), "got %v; want %v", got, tc.want)
		})
	}
}

func TestParseResourceAttributesBounds(t *testing.T) {
	var members []string
	for i := range MaxResourceAttrs + 5 {
		members = append(members, "k"+strings.Repeat("x", i)+"=v")
	}
	got, err := ParseResourceAttributes(strings.Join(members, ","))
	require.NoError(t, err)
	require.Len(t, got, MaxResourceAttrs, "want the first %d", MaxResourceAttrs)
	require.Equal(t, attribute.Key("k"), got[0].Key, "want the first %d", MaxResourceAttrs)
	got, err = ParseResourceAttributes(strings.Repeat("k", MaxResourceKey+1) + "=v,ok=1")
	require.NoError(t, err, "over-long key")
	require.True(t, equalKVs(got, []attribute.KeyValue{attribute.String("ok", "1")}), "over-long key: %v", got)
	long := strings.Repeat("é", MaxResourceValue) // 2 bytes each
	got, err = ParseResourceAttributes("a=" + long + "x")
	require.NoError(t, err, "over-long value")
	require.Len(t, got, 1, "over-long value")
	require.Equal(t, long[:MaxResourceValue], got[0].Value.AsString(), "over-long value")
	got, _ = ParseResourceAttributes("a=x" + long)
	v := got[0].Value.AsString()
	require.Len(t, v, MaxResourceValue-1, "value not cut at a character boundary")
	require.True(t, strings.HasPrefix(v, "x"), "value not cut at a character boundary: %q", v)
}

func equalKVs(a, b []attribute.KeyValue) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
