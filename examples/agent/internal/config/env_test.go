package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// env is a lookup over m, for Load.
func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestEnv(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   map[string]string
		check func(t *testing.T, c Config)
	}{
		{"service name and interval", map[string]string{EnvServiceName: "trainer", EnvMetricInterval: "5000"}, func(t *testing.T, c Config) {
			assert.Equal(t, "trainer", c.ServiceName)
			assert.Equal(t, 5*time.Second, c.Export.Interval)
		}},
		{"general endpoint gets the signal paths", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, func(t *testing.T, c Config) {
			assert.Equal(t, OTLPSignal{Endpoint: "http://c:4318/v1/metrics", Protocol: ProtocolHTTPProtobuf, Insecure: true, Headers: map[string]string{}}, c.Export.OTLP.Metrics)
			assert.Equal(t, OTLPSignal{Endpoint: "http://c:4318/v1/traces", Protocol: ProtocolHTTPProtobuf, Insecure: true, Headers: map[string]string{}}, c.Export.OTLP.Traces)
		}},
		{"per-signal endpoint as it is", map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT":         "https://c:4318/",
			"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "https://m:4318/ingest",
		}, func(t *testing.T, c Config) {
			assert.Equal(t, "https://m:4318/ingest", c.Export.OTLP.Metrics.Endpoint)
			assert.Equal(t, "https://c:4318/v1/traces", c.Export.OTLP.Traces.Endpoint)
			assert.False(t, c.Export.OTLP.Traces.Insecure)
		}},
		{"grpc host:port, insecure in any case", map[string]string{
			"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
			"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4317",
			"OTEL_EXPORTER_OTLP_INSECURE": "TRUE",
		}, func(t *testing.T, c Config) {
			want := OTLPSignal{Endpoint: "c:4317", Protocol: ProtocolGRPC, Insecure: true, Headers: map[string]string{}}
			assert.Equal(t, want, c.Export.OTLP.Metrics)
			assert.Equal(t, want, c.Export.OTLP.Traces)
		}},
		{"per-signal protocol and insecure", map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT":        "c:4317",
			"OTEL_EXPORTER_OTLP_PROTOCOL":        "grpc",
			"OTEL_EXPORTER_OTLP_INSECURE":        "true",
			"OTEL_EXPORTER_OTLP_TRACES_INSECURE": "false",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:4318/v1/traces",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
		}, func(t *testing.T, c Config) {
			assert.Equal(t, OTLPSignal{Endpoint: "c:4317", Protocol: ProtocolGRPC, Insecure: true, Headers: map[string]string{}}, c.Export.OTLP.Metrics)
			assert.Equal(t, OTLPSignal{Endpoint: "http://t:4318/v1/traces", Protocol: ProtocolHTTPProtobuf, Insecure: true, Headers: map[string]string{}}, c.Export.OTLP.Traces,
				"an http:// URL is plain text whatever INSECURE says")
		}},
		{"headers, percent-decoded, per signal over general", map[string]string{
			"OTEL_EXPORTER_OTLP_HEADERS":         "Authorization=Bearer%20abc, x%2Dtenant = ml ,k=a=b",
			"OTEL_EXPORTER_OTLP_TRACES_HEADERS":  "x-tenant=traces",
			"OTEL_EXPORTER_OTLP_METRICS_HEADERS": "k=1,k=2",
		}, func(t *testing.T, c Config) {
			assert.Equal(t, map[string]string{"Authorization": "Bearer abc", "x-tenant": "ml", "k": "2"}, c.Export.OTLP.Metrics.Headers)
			assert.Equal(t, map[string]string{"Authorization": "Bearer abc", "x-tenant": "traces", "k": "a=b"}, c.Export.OTLP.Traces.Headers)
		}},
		{"empty and blank values are unset", map[string]string{
			EnvServiceName:                "",
			EnvMetricInterval:             "  ",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "",
			"OTEL_EXPORTER_OTLP_ENDPOINT": " ",
			EnvResourceAttributes:         "",
		}, func(t *testing.T, c Config) {
			assert.Equal(t, defaults(), c)
		}},
		{"surrounding space is dropped", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": " grpc\n", EnvMetricInterval: " 250 "}, func(t *testing.T, c Config) {
			assert.Equal(t, ProtocolGRPC, c.Export.OTLP.Metrics.Protocol)
			assert.Equal(t, 250*time.Millisecond, c.Export.Interval)
		}},
		{"variables outside the OpenTelemetry set are not read", map[string]string{"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "bogus", "OTEL_LOG_LEVEL": "bogus"}, func(t *testing.T, c Config) {
			assert.Equal(t, defaults(), c)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load("", env(tc.env))
			require.NoError(t, err)
			tc.check(t, c)
			assert.NoError(t, c.Validate())
		})
	}
}

func TestResourceAttributesEnv(t *testing.T) {
	for _, tc := range []struct {
		name, attrs, service string
		want                 map[string]string
		wantService          string
	}{
		{"plain", "a=b,c=d", "", map[string]string{"a": "b", "c": "d"}, DefaultServiceName},
		{"space around keys and values", " a = b , c=d ", "", map[string]string{"a": "b", "c": "d"}, DefaultServiceName},
		{"percent-decoded values", "k8s.pod.name=my%2Cpod,note=a%20b%3Dc", "", map[string]string{"k8s.pod.name": "my,pod", "note": "a b=c"}, DefaultServiceName},
		{"plus is not space", "v=a+b", "", map[string]string{"v": "a+b"}, DefaultServiceName},
		{"equals sign in a value", "v=a=b", "", map[string]string{"v": "a=b"}, DefaultServiceName},
		{"empty value", "v=", "", map[string]string{"v": ""}, DefaultServiceName},
		{"later entry wins", "v=1,v=2", "", map[string]string{"v": "2"}, DefaultServiceName},
		{"keys are not decoded", "a%2Eb=1", "", map[string]string{"a%2Eb": "1"}, DefaultServiceName},
		{"UTF-8 value", "team=%C3%A9quipe", "", map[string]string{"team": "équipe"}, DefaultServiceName},
		{"service.name moves to ServiceName", "service.name=svc,a=b", "", map[string]string{"a": "b"}, "svc"},
		{"OTEL_SERVICE_NAME wins over service.name", "service.name=svc", "named", map[string]string{}, "named"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := map[string]string{EnvResourceAttributes: tc.attrs}
			if tc.service != "" {
				e[EnvServiceName] = tc.service
			}
			c, err := Load("", env(e))
			require.NoError(t, err)
			assert.Equal(t, tc.want, c.Resource)
			assert.Equal(t, tc.wantService, c.ServiceName)
		})
	}
}

func TestEnvErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []want // key holds the variable name
	}{
		{"resource: empty entry", map[string]string{EnvResourceAttributes: "a=b,,c=d"},
			[]want{{key: EnvResourceAttributes, msg: "entry 2 is empty (a stray comma?)"}}},
		{"resource: trailing comma", map[string]string{EnvResourceAttributes: "a=b,"},
			[]want{{key: EnvResourceAttributes, msg: "entry 2 is empty"}}},
		{"resource: no equals sign", map[string]string{EnvResourceAttributes: "a=b,c"},
			[]want{{key: EnvResourceAttributes, msg: "entry 2 is not key=value"}}},
		{"resource: bad escape", map[string]string{EnvResourceAttributes: "a=100%"},
			[]want{{key: EnvResourceAttributes, msg: `entry 1, "a": value is not percent-encoded right (a % must begin %XX)`}}},
		{"resource: empty key", map[string]string{EnvResourceAttributes: "=v"},
			[]want{{key: EnvResourceAttributes, msg: `entry 1: attribute name "" is empty`}}},
		{"resource: space in a key", map[string]string{EnvResourceAttributes: "a b=v"},
			[]want{{key: EnvResourceAttributes, msg: `attribute name "a b" is empty, not UTF-8, or holds a space`}}},
		{"resource: control character decoded", map[string]string{EnvResourceAttributes: "a=x%0Ay"},
			[]want{{key: EnvResourceAttributes, msg: `value "x\ny" is not UTF-8 or holds a control character`}}},
		{"resource: invalid UTF-8 decoded", map[string]string{EnvResourceAttributes: "a=%FF"},
			[]want{{key: EnvResourceAttributes, msg: "is not UTF-8"}}},
		{"resource: every bad entry", map[string]string{EnvResourceAttributes: "x,=1,ok=1,y"},
			[]want{
				{key: EnvResourceAttributes, msg: "entry 1 is not key=value"},
				{key: EnvResourceAttributes, msg: "entry 2: attribute name"},
				{key: EnvResourceAttributes, msg: "entry 4 is not key=value"},
			}},
		{"service name with a control character", map[string]string{EnvServiceName: "a\x01b"},
			[]want{{key: EnvServiceName, msg: "holds a control character"}}},
		{"interval with a unit", map[string]string{EnvMetricInterval: "15s"},
			[]want{{key: EnvMetricInterval, msg: `want milliseconds as a whole number, got "15s"`}}},
		{"interval zero", map[string]string{EnvMetricInterval: "0"},
			[]want{{key: EnvMetricInterval, msg: "interval 0s is outside 100ms to 24h0m0s"}}},
		{"interval negative", map[string]string{EnvMetricInterval: "-5"},
			[]want{{key: EnvMetricInterval, msg: "interval -5ms is outside"}}},
		{"interval overflowing a Duration", map[string]string{EnvMetricInterval: "9223372036854775807"},
			[]want{{key: EnvMetricInterval, msg: "interval 9223372036854775807ms is outside"}}},
		{"protocol http/json", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			[]want{{key: "OTEL_EXPORTER_OTLP_PROTOCOL", msg: `protocol "http/json" is not supported`}}},
		{"per-signal protocol", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "GRPC"},
			[]want{{key: "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", msg: `want grpc or http/protobuf, got "GRPC"`}}},
		{"endpoint scheme", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "unix:///sock"},
			[]want{{key: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", msg: `want scheme http or https, got "unix"`}}},
		{"host:port with the default protocol", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4317"},
			[]want{{key: "OTEL_EXPORTER_OTLP_ENDPOINT", msg: "which protocol http/protobuf needs (the default protocol"}}},
		{"insecure yes", map[string]string{"OTEL_EXPORTER_OTLP_INSECURE": "yes"},
			[]want{{key: "OTEL_EXPORTER_OTLP_INSECURE", msg: `want true or false, got "yes"`}}},
		{"insecure 1", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_INSECURE": "1"},
			[]want{{key: "OTEL_EXPORTER_OTLP_TRACES_INSECURE", msg: `want true or false, got "1"`}}},
		{"header name", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a%20b=1"},
			[]want{{key: "OTEL_EXPORTER_OTLP_HEADERS", msg: `entry 1: header name "a b": byte ' ' is not allowed`}}},
		{"header key escape", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_HEADERS": "a%zz=1"},
			[]want{{key: "OTEL_EXPORTER_OTLP_METRICS_HEADERS", msg: `entry 1: key "a%zz" is not percent-encoded right`}}},
		{"header value with a newline", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "auth=a%0D%0Ab"},
			[]want{{key: "OTEL_EXPORTER_OTLP_HEADERS", msg: `header "auth": value holds control character '\r'`}}},
		{"every variable at fault", map[string]string{EnvMetricInterval: "x", "OTEL_EXPORTER_OTLP_PROTOCOL": "x", "OTEL_EXPORTER_OTLP_TRACES_INSECURE": "x"},
			[]want{
				{key: EnvMetricInterval, msg: "want milliseconds"},
				{key: "OTEL_EXPORTER_OTLP_PROTOCOL", msg: "want grpc or http/protobuf"},
				{key: "OTEL_EXPORTER_OTLP_TRACES_INSECURE", msg: "want true or false"},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("", env(tc.env))
			require.Error(t, err)
			got := problems(t, err)
			require.Len(t, got, len(tc.want), "%v", err)
			for i, w := range tc.want {
				assert.Equal(t, w.key, got[i].Env)
				assert.Contains(t, got[i].Msg, w.msg)
				assert.Empty(t, got[i].File)
				assert.Empty(t, got[i].Key)
			}
		})
	}
}

// TestEnvHeaderErrorsKeepSecrets: a malformed header list may hold a
// token; the error does not repeat it.
func TestEnvHeaderErrorsKeepSecrets(t *testing.T) {
	for _, v := range []string{"Bearer s3cr3t", "authorization=Bearer s3cr3t%", "x=s3cr3t\x01"} {
		_, err := Load("", env(map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": v}))
		require.Error(t, err, v)
		assert.NotContains(t, err.Error(), "s3cr3t")
	}
}

// TestPrecedence: per setting and per map entry, the file wins over the
// environment, which wins over the default; per-signal OTLP settings win
// over general ones.
func TestPrecedence(t *testing.T) {
	t.Run("scalars", func(t *testing.T) {
		e := map[string]string{
			EnvServiceName:                "env-name",
			EnvMetricInterval:             "5000",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
			"OTEL_EXPORTER_OTLP_INSECURE": "true",
			"OTEL_EXPORTER_OTLP_ENDPOINT": "env:4317",
		}
		c, err := load("agent.yaml", []byte("service_name: file-name\nexport:\n  interval: 15s\n"), env(e))
		require.NoError(t, err)
		assert.Equal(t, "file-name", c.ServiceName, "file over OTEL_SERVICE_NAME")
		assert.Equal(t, 15*time.Second, c.Export.Interval, "file over OTEL_METRIC_EXPORT_INTERVAL")
		assert.Equal(t, OTLPSignal{Endpoint: "env:4317", Protocol: ProtocolGRPC, Insecure: true, Headers: map[string]string{}}, c.Export.OTLP.Metrics,
			"what the file leaves out comes from the environment")

		c, err = load("agent.yaml", []byte("export:\n  otlp: {protocol: http/protobuf, endpoint: \"https://file:4318\"}\n"), env(e))
		require.NoError(t, err)
		assert.Equal(t, "env-name", c.ServiceName)
		assert.Equal(t, 5*time.Second, c.Export.Interval)
		assert.Equal(t, OTLPSignal{Endpoint: "https://file:4318/v1/traces", Protocol: ProtocolHTTPProtobuf, Headers: map[string]string{}}, c.Export.OTLP.Traces)
	})

	t.Run("service name", func(t *testing.T) {
		for _, tc := range []struct {
			name, file string
			env        map[string]string
			want       string
		}{
			{"file", "service_name: f\n", map[string]string{EnvServiceName: "e", EnvResourceAttributes: "service.name=r"}, "f"},
			{"OTEL_SERVICE_NAME", "", map[string]string{EnvServiceName: "e", EnvResourceAttributes: "service.name=r"}, "e"},
			{"OTEL_RESOURCE_ATTRIBUTES", "", map[string]string{EnvResourceAttributes: "service.name=r"}, "r"},
			{"default", "", nil, DefaultServiceName},
		} {
			c, err := load("agent.yaml", []byte(tc.file), env(tc.env))
			require.NoError(t, err, tc.name)
			assert.Equal(t, tc.want, c.ServiceName, tc.name)
			assert.NotContains(t, c.Resource, "service.name", tc.name)
		}
	})

	t.Run("resource attributes merge per entry", func(t *testing.T) {
		c, err := load("agent.yaml", []byte("resource:\n  b: file\n  c: file\n"), env(map[string]string{EnvResourceAttributes: "a=env,b=env"}))
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"a": "env", "b": "file", "c": "file"}, c.Resource)
	})

	t.Run("headers merge per entry, most specific first", func(t *testing.T) {
		file := "export:\n  otlp:\n    endpoint: \"https://c:4318\"\n    headers: {b: file, c: file}\n    metrics:\n      headers: {d: file-metrics}\n"
		e := map[string]string{
			"OTEL_EXPORTER_OTLP_HEADERS":         "a=env,b=env",
			"OTEL_EXPORTER_OTLP_METRICS_HEADERS": "c=env-metrics,d=env-metrics",
		}
		c, err := load("agent.yaml", []byte(file), env(e))
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"a": "env", "b": "file", "c": "env-metrics", "d": "file-metrics"}, c.Export.OTLP.Metrics.Headers)
		assert.Equal(t, map[string]string{"a": "env", "b": "file", "c": "file"}, c.Export.OTLP.Traces.Headers)
	})

	t.Run("endpoint order", func(t *testing.T) {
		// Each case drops the source that won the one before.
		layers := []struct {
			env, fileKey, value string
		}{
			{fileKey: "metrics", value: "https://file-metrics:4318/m"},
			{env: "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", value: "https://env-metrics:4318/m"},
			{fileKey: "general", value: "https://file:4318"},
			{env: "OTEL_EXPORTER_OTLP_ENDPOINT", value: "https://env:4318"},
		}
		wants := []string{
			"https://file-metrics:4318/m",
			"https://env-metrics:4318/m",
			"https://file:4318/v1/metrics",
			"https://env:4318/v1/metrics",
			"",
		}
		for skip := range len(layers) + 1 {
			e := map[string]string{}
			file := "export:\n  otlp:\n"
			for _, l := range layers[skip:] {
				switch {
				case l.env != "":
					e[l.env] = l.value
				case l.fileKey == "general":
					file += "    endpoint: " + l.value + "\n"
				default:
					file += "    metrics: {endpoint: \"" + l.value + "\"}\n"
				}
			}
			c, err := load("agent.yaml", []byte(file), env(e))
			require.NoError(t, err)
			assert.Equal(t, wants[skip], c.Export.OTLP.Metrics.Endpoint, "without the first %d sources", skip)
		}
	})

	t.Run("a file error does not fall back to the environment", func(t *testing.T) {
		_, err := load("agent.yaml", []byte("export:\n  otlp: {protocol: x}\n"), env(map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}))
		assert.ErrorContains(t, err, `agent.yaml:2:20: export.otlp.protocol: want grpc or http/protobuf, got "x"`)
	})

	t.Run("problems in both are all reported", func(t *testing.T) {
		_, err := load("agent.yaml", []byte("log_level: x\n"), env(map[string]string{"OTEL_EXPORTER_OTLP_INSECURE": "x"}))
		got := problems(t, err)
		require.Len(t, got, 2)
		assert.Equal(t, "log_level", got[0].Key)
		assert.Equal(t, "OTEL_EXPORTER_OTLP_INSECURE", got[1].Env)
	})
}
