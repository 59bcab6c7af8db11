package podjoin

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScanPodLogs(t *testing.T) {
	root := t.TempDir()
	_, err := scanPodLogs(root, maxLogEntries)
	require.ErrorContains(t, err, filepath.Join(root, "pods"), "missing directory: want an error naming it")
	r, _ := newTestResolver(t, t.TempDir(), root)
	st := r.Status()
	require.Error(t, st.LogErr, "status %+v", st)
	require.Zero(t, st.NamedPods, "status %+v", st)

	for _, d := range []string{"pods", "containers"} {
		require.NoError(t, os.Mkdir(filepath.Join(root, d), 0o755))
	}
	const n = 5
	for i := range n {
		for _, name := range []string{
			fmt.Sprintf("pods/ns_pod-%d_%08x-524d-5472-b6fd-cd5deeb0e561", i, i),
			fmt.Sprintf("containers/pod-%d_ns_c-%064x.log", i, i),
		} {
			require.NoError(t, os.Mkdir(filepath.Join(root, name), 0o755))
		}
	}
	l, err := scanPodLogs(root, n)
	require.NoError(t, err)
	require.Len(t, l.pods, n, "pods")
	require.Len(t, l.uids, n, "uids")
	require.Len(t, l.containers, n, "containers")
	require.False(t, l.truncated, "truncated")
	// Past the cap, the rest is not read, and the scan says so.
	l, err = scanPodLogs(root, n-2)
	require.NoError(t, err)
	require.Len(t, l.pods, n-2, "pods")
	require.Len(t, l.containers, n-2, "containers")
	require.True(t, l.truncated, "truncated")
	r.refreshLogs()
	st = r.Status()
	require.NoError(t, st.LogErr, "status %+v", st)
	require.Equal(t, n, st.NamedPods, "status %+v", st)
	require.False(t, st.Truncated, "status %+v", st)
	// A failed scan keeps the names of the last good one: a UID or a
	// container id is never reused, so they cannot be wrong.
	require.NoError(t, os.RemoveAll(filepath.Join(root, "containers")))
	r.refreshLogs()
	st = r.Status()
	require.Error(t, st.LogErr, "after a failed scan: %+v", st)
	require.Equal(t, n, st.NamedPods, "after a failed scan: %+v", st)
}
