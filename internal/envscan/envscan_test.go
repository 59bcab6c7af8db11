package envscan

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/procfs/procfstest"
)

// Read takes the allowed variables of a process's environ file, the
// MLflow tracking URI and the TPU runtime's metrics ports among them, and
// none of MLflow's credentials; its
// buffer is zeroed after. (podjoin's tests cover the scanner: its pieces,
// caps and secrets.)
func TestRead(t *testing.T) {
	root := procfstest.New(t, procfstest.Process{PID: 7, Environ: []string{
		"MLFLOW_TRACKING_PASSWORD=hunter2", "MLFLOW_TRACKING_URI=file:///data/mlruns",
		"MLFLOW_TRACKING_TOKEN=tok", "OTEL_SERVICE_NAME=trainer", "TPU_RUNTIME_METRICS_PORTS=8431,8432", "TPU_SECRET=x",
	}})
	buf := make([]byte, BufSize)
	v, err := Read(procfs.FS{Root: root}.Proc(7), buf)
	require.NoError(t, err)
	assert.Equal(t, Vars{ServiceName: "trainer", MLflowTrackingURI: "file:///data/mlruns", TPURuntimeMetricsPorts: "8431,8432"}, v)
	assert.False(t, bytes.ContainsFunc(buf, func(r rune) bool { return r != 0 }), "the buffer is zeroed")
	_, err = Read(procfs.FS{Root: root}.Proc(8), buf)
	assert.Error(t, err, "no such process")
	assert.Greater(t, BufSize, MaxEntry, "a buffer holds the longest entry kept")
}
