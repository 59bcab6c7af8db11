package ncclinspector

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadEnv(t *testing.T) {
	block := strings.Join([]string{
		"PATH=/usr/bin",
		"AWS_SECRET_ACCESS_KEY=do-not-copy",
		"NCCL_PROFILER_PLUGIN=/opt/nccl/libnccl-profiler-inspector.so",
		"NCCL_INSPECTOR_ENABLE=1",
		"NCCL_INSPECTOR_DUMP_DIR_X=not this one",
		"XNCCL_INSPECTOR_DUMP_DIR=nor this",
		"LONG=" + strings.Repeat("y", 3*maxEnvEntry) + "NCCL_INSPECTOR_DUMP_DIR=/in/a/value", // not a variable
		"NCCL_INSPECTOR_DUMP_DIR=/logs/" + strings.Repeat("d", maxEnvEntry),                  // too long: skipped
		"SLURM_JOBID=4242",
		"NCCL_INSPECTOR_PROM_DUMP", // no '=': not a variable
	}, "\x00") // the last entry has no NUL after it
	env, err := ReadEnv(strings.NewReader(block))
	require.NoError(t, err)
	assert.Equal(t, Env{EnvPlugin: "/opt/nccl/libnccl-profiler-inspector.so", EnvEnable: "1", EnvJobID: "4242"}, env)
}

func TestLocate(t *testing.T) {
	plugin := "/opt/nccl/libnccl-profiler-inspector.so"
	for _, tc := range []struct {
		name string
		env  Env
		out  Output
		dir  string
	}{
		{"nothing", Env{}, None, ""},
		{"a plugin, not enabled", Env{EnvPlugin: plugin}, None, ""},
		{"enabled, no plugin", Env{EnvEnable: "1"}, None, ""},
		{"enabled with 0", Env{EnvPlugin: plugin, EnvEnable: "0"}, None, ""},
		{"enabled with a word (atoi: 0)", Env{EnvPlugin: plugin, EnvEnable: "yes"}, None, ""},
		{"enabled with 2", Env{EnvPlugin: plugin, EnvEnable: " 2"}, JSON, "nccl-inspector-unknown-jobid"},
		{"the dump directory", Env{EnvPlugin: plugin, EnvEnable: "1", EnvDumpDir: "/logs/42/"}, JSON, "/logs/42/"},
		{"a SLURM job", Env{EnvPlugin: plugin, EnvEnable: "1", EnvJobID: "4242"}, JSON, "nccl-inspector-4242"},
		{"a SLURM job as strtol reads it", Env{EnvPlugin: plugin, EnvEnable: "1", EnvJobID: " 17.3"}, JSON, "nccl-inspector-17"},
		{"a SLURM job of no digit", Env{EnvPlugin: plugin, EnvEnable: "1", EnvJobID: "x"}, JSON, "nccl-inspector-0"},
		{"a SLURM job past a long", Env{EnvPlugin: plugin, EnvEnable: "1", EnvJobID: "99999999999999999999"}, JSON,
			"nccl-inspector-unknown-jobid"},
		{"a SLURM job past an int", Env{EnvPlugin: plugin, EnvEnable: "1", EnvJobID: "4294967297"}, JSON, "nccl-inspector-1"},
		{"Prometheus", Env{EnvPlugin: plugin, EnvEnable: "1", EnvPromDump: "1", EnvDumpDir: "/var/lib/node_exporter"},
			Prometheus, "/var/lib/node_exporter"},
		{"Prometheus off", Env{EnvPlugin: plugin, EnvEnable: "1", EnvPromDump: "0"}, JSON, "nccl-inspector-unknown-jobid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, dir := Locate(tc.env)
			assert.Equal(t, tc.out, out)
			assert.Equal(t, tc.dir, dir)
		})
	}
}

// FuzzReadEnv: any block reads without a panic, into the allowed names
// alone, each value shorter than an entry.
func FuzzReadEnv(f *testing.F) {
	f.Add([]byte("NCCL_INSPECTOR_ENABLE=1\x00SLURM_JOBID=3\x00"))
	f.Add([]byte("\x00\x00=\x00NCCL_PROFILER_PLUGIN="))
	f.Fuzz(func(t *testing.T, b []byte) {
		env, err := ReadEnv(strings.NewReader(string(b)))
		require.NoError(t, err)
		for k, v := range env {
			assert.Contains(t, envNames[:], k)
			assert.Less(t, len(v), maxEnvEntry)
		}
	})
}
