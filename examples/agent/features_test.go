package main

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/genai"
	"github.com/xpuscope/xpuscope/semconv"
)

// -check says what the capture probes: OpenSSL files and Go programs
// apart, and what it could not probe.
func TestDescribeCapture(t *testing.T) {
	ports := []uint16{8000}
	require.Equal(t, "plaintext HTTP on ports [8000]; TLS: no OpenSSL or Go crypto/tls mapped yet; new processes and dlopen are watched",
		describeCapture(genai.CaptureStatus{PlaintextPorts: ports}))
	st := genai.CaptureStatus{PlaintextPorts: ports,
		Attachments: []xpuscope.Attachment{
			{Target: genai.TargetGoTLS, Path: "/usr/bin/gateway", PID: 7},
			{Target: genai.TargetOpenSSL, Path: "/usr/lib/libssl.so.3", PID: 3},
			{Target: genai.TargetGoTLS, Path: "/opt/agent", PID: 9},
		},
		Rejections: []xpuscope.Rejection{{Target: genai.TargetOpenSSL, Path: "/opt/libssl.so.1.1", PID: 4, Reason: "stripped"}},
	}
	require.Equal(t, "plaintext HTTP on ports [8000]; TLS: uprobes on 1 OpenSSL file(s): /usr/lib/libssl.so.3 (pid 3); "+
		"uprobes on 2 Go program(s): /usr/bin/gateway (pid 7) /opt/agent (pid 9); not probed: /opt/libssl.so.1.1 (pid 4): stripped",
		describeCapture(st))
	st.RawSyscalls = errors.New("tracefs not mounted")
	require.True(t, strings.HasPrefix(describeCapture(st), "plaintext HTTP on ports [8000] (at every system call: tracefs not mounted); TLS: "),
		describeCapture(st))
}

// -check's first line says the platform, and how the eBPF features read
// arguments and place probes there: on arm64, AAPCS64 and Go's R0-R2, g
// in R28, probes past BTI (make test-arm64 runs this as an arm64 binary).
func TestCheckSaysThePlatform(t *testing.T) {
	var b strings.Builder
	printCheck(&b, []result{{name: "gpu", state: unavailable, detail: "no GPU"}})
	lines := strings.Split(b.String(), "\n")
	require.GreaterOrEqual(t, len(lines), 2)
	assert.Regexp(t, `^platform +linux/`+runtime.GOARCH+` +calling conventions: `, lines[0])
	assert.Regexp(t, `^gpu +unavailable +no GPU$`, lines[1])
	want := map[string][]string{
		"amd64": {"System V AMD64", "g in R14", "past endbr64", "JBE"},
		"arm64": {"AAPCS64", "x0-x7", "g in R28", "past a BTI landing pad", "B.LS", "AArch32"},
	}[runtime.GOARCH]
	require.NotEmpty(t, want, "no platform known for %s", runtime.GOARCH)
	for _, w := range want {
		assert.Contains(t, lines[0], w)
	}
}

// The registry's values of xpuscope.feature are the agent's features, in
// start order: the label a dashboard filters on names every one.
func TestFeatureNamesRegistered(t *testing.T) {
	var names []string
	for _, f := range features {
		names = append(names, f.name)
	}
	i := slices.IndexFunc(semconv.Attributes(), func(a semconv.Attribute) bool { return a.Key == semconv.XpuscopeFeature })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, names, semconv.Attributes()[i].Values)
}
