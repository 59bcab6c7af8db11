package podjoin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScanPodLogs(t *testing.T) {
	root := t.TempDir()
	if _, err := scanPodLogs(root, maxLogEntries); err == nil || !strings.Contains(err.Error(), filepath.Join(root, "pods")) {
		t.Fatalf("missing directory: err = %v, want one naming it", err)
	}
	r, _ := newTestResolver(t, t.TempDir(), root)
	if st := r.Status(); st.LogErr == nil || st.NamedPods != 0 {
		t.Fatalf("status %+v", st)
	}

	for _, d := range []string{"pods", "containers"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const n = 5
	for i := range n {
		for _, name := range []string{
			fmt.Sprintf("pods/ns_pod-%d_%08x-524d-5472-b6fd-cd5deeb0e561", i, i),
			fmt.Sprintf("containers/pod-%d_ns_c-%064x.log", i, i),
		} {
			if err := os.Mkdir(filepath.Join(root, name), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	l, err := scanPodLogs(root, n)
	if err != nil || len(l.pods) != n || len(l.uids) != n || len(l.containers) != n || l.truncated {
		t.Fatalf("%d pods, %d containers, truncated %v, %v", len(l.pods), len(l.containers), l.truncated, err)
	}
	// Past the cap, the rest is not read, and the scan says so.
	l, err = scanPodLogs(root, n-2)
	if err != nil || len(l.pods) != n-2 || len(l.containers) != n-2 || !l.truncated {
		t.Fatalf("%d pods, %d containers, truncated %v, %v", len(l.pods), len(l.containers), l.truncated, err)
	}
	r.refreshLogs()
	if st := r.Status(); st.LogErr != nil || st.NamedPods != n || st.Truncated {
		t.Fatalf("status %+v", st)
	}
	// A failed scan keeps the names of the last good one: a UID or a
	// container id is never reused, so they cannot be wrong.
	if err := os.RemoveAll(filepath.Join(root, "containers")); err != nil {
		t.Fatal(err)
	}
	r.refreshLogs()
	if st := r.Status(); st.LogErr == nil || st.NamedPods != n {
		t.Fatalf("after a failed scan: %+v", st)
	}
}
