package podjoin

import (
	"strings"
	"testing"

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
			if sc.IsValid() != tc.valid {
				t.Fatalf("valid = %v, want %v", sc.IsValid(), tc.valid)
			}
			if !tc.valid {
				if !sc.Equal(trace.SpanContext{}) {
					t.Fatalf("invalid traceparent gave %+v", sc)
				}
				return
			}
			if sc.TraceID().String() != tid || sc.SpanID().String() != sid || !sc.IsRemote() {
				t.Fatalf("ids %s %s remote %v", sc.TraceID(), sc.SpanID(), sc.IsRemote())
			}
			if sc.TraceFlags() != tc.flags || sc.TraceState().String() != tc.state {
				t.Fatalf("flags %02x state %q, want %02x %q", byte(sc.TraceFlags()), sc.TraceState().String(), byte(tc.flags), tc.state)
			}
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
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), EnvResourceAttributes) || got != nil {
					t.Fatalf("got %v, %v; want nil and an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil || !equalKVs(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestParseResourceAttributesBounds(t *testing.T) {
	var members []string
	for i := range MaxResourceAttrs + 5 {
		members = append(members, "k"+strings.Repeat("x", i)+"=v")
	}
	got, err := ParseResourceAttributes(strings.Join(members, ","))
	if err != nil || len(got) != MaxResourceAttrs || got[0].Key != "k" {
		t.Fatalf("%d attributes, %v; want the first %d", len(got), err, MaxResourceAttrs)
	}
	got, err = ParseResourceAttributes(strings.Repeat("k", MaxResourceKey+1) + "=v,ok=1")
	if err != nil || !equalKVs(got, []attribute.KeyValue{attribute.String("ok", "1")}) {
		t.Fatalf("over-long key: %v, %v", got, err)
	}
	long := strings.Repeat("é", MaxResourceValue) // 2 bytes each
	got, err = ParseResourceAttributes("a=" + long + "x")
	if err != nil || len(got) != 1 || got[0].Value.AsString() != long[:MaxResourceValue] {
		t.Fatalf("over-long value: %d bytes, %v", len(got[0].Value.AsString()), err)
	}
	got, _ = ParseResourceAttributes("a=x" + long)
	if v := got[0].Value.AsString(); len(v) != MaxResourceValue-1 || !strings.HasPrefix(v, "x") {
		t.Fatalf("value not cut at a character boundary: %d bytes", len(v))
	}
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
