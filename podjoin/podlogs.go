package podjoin

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// The kubelet names two log directories after the pods and containers it
// runs; nothing else on a node maps a pod UID or a container id to names
// without the API server or the runtime's socket (the PodResources API
// has neither UIDs nor container ids):
//
//	<root>/pods/<namespace>_<pod>_<uid>/<container>/<restart>.log
//	<root>/containers/<pod>_<namespace>_<container>-<container id>.log
//
// Kubernetes names (namespaces, pods, containers) never contain '_'. Only
// the entry names are read, never a log.

// podName is a pod's namespace and name.
type podName struct{ namespace, name string }

// containerName places a container id.
type containerName struct {
	pod       podName
	container string
}

// podLogs is what one scan of the log directories found.
type podLogs struct {
	pods       map[string]podName       // pod UID → pod
	uids       map[podName]string       // pod → UID
	containers map[string]containerName // container id → container
	truncated  bool
}

// maxLogEntries caps the entries read of each log directory: several
// times the pods a kubelet runs (110 by default), with their restarts.
const maxLogEntries = 16384

// scanPodLogs reads up to max names in each of <root>/pods and
// <root>/containers. A missing directory is an error naming it; entries
// that are not the kubelet's are skipped.
func scanPodLogs(root string, max int) (podLogs, error) {
	l := podLogs{pods: map[string]podName{}, uids: map[podName]string{}, containers: map[string]containerName{}}
	names, more, err := readNames(filepath.Join(root, "pods"), max)
	if err != nil {
		return l, err
	}
	l.truncated = more
	for _, n := range names {
		if p, uid, ok := parsePodLogDir(n); ok {
			l.pods[uid] = p
			l.uids[p] = uid
		}
	}
	names, more, err = readNames(filepath.Join(root, "containers"), max)
	if err != nil {
		return l, err
	}
	l.truncated = l.truncated || more
	for _, n := range names {
		if id, c, ok := parseContainerLogName(n); ok {
			l.containers[id] = c
		}
	}
	return l, nil
}

// readNames lists up to max names of dir; more reports that there were
// others.
func readNames(dir string, max int) (names []string, more bool, err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, false, fmt.Errorf("podjoin: pod log directory: %w", err)
	}
	defer f.Close()
	names, err = f.Readdirnames(max + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, fmt.Errorf("podjoin: pod log directory %s: %w", dir, err)
	}
	if len(names) > max {
		return names[:max], true, nil
	}
	return names, false, nil
}

// parsePodLogDir reads <namespace>_<pod>_<uid>.
func parsePodLogDir(name string) (podName, string, bool) {
	parts := strings.Split(name, "_")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return podName{}, "", false
	}
	uid, ok := normalizeUID([]byte(parts[2]))
	if !ok {
		return podName{}, "", false
	}
	return podName{namespace: parts[0], name: parts[1]}, uid, true
}

// parseContainerLogName reads <pod>_<namespace>_<container>-<id>.log. The
// kubelet cuts the name to 255 bytes, which can cut the id of a pod with a
// very long name: such a name does not parse.
func parseContainerLogName(name string) (string, containerName, bool) {
	name, ok := strings.CutSuffix(name, ".log")
	if !ok || len(name) < 65 || name[len(name)-65] != '-' {
		return "", containerName{}, false
	}
	id := name[len(name)-64:]
	if !isContainerID([]byte(id)) {
		return "", containerName{}, false
	}
	parts := strings.Split(name[:len(name)-65], "_")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", containerName{}, false
	}
	return id, containerName{pod: podName{namespace: parts[1], name: parts[0]}, container: parts[2]}, true
}
