package node

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/podjoin"
	"github.com/xpuscope/xpuscope/semconv"
)

// A socket opened before the Source started, in a pod: its owner is not
// known to the kernel side, so its events are put in the pod of the
// socket's cgroup, through a process of the cgroup and the real podjoin
// resolver. The pod is a cgroup v2 directory the test makes, named as
// the kubelet's systemd driver names a besteffort pod's container, with a
// Python process in it (moved in as it starts) that connects to a
// listener of the test's before the Source starts; after, it closes the
// connection abortively: the reset it sends is counted with the pod's
// UID and the container's id.
func TestOlderSocketInItsPod(t *testing.T) {
	testutil.Native(t, "the kernel's cgroups and BPF")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "making a cgroup needs root")
	}
	root := cgroup2Mount("/proc")
	if root == "" {
		testutil.SkipOrFail(t, "no cgroup v2 mount")
	}
	const uid = "3f1c2a7e-0b5d-4c9a-8e21-6d4b9f0a1c3e"
	id := strings.Repeat("ab", 32)
	dir := filepath.Join(root, "kubepods.slice", "kubepods-besteffort.slice",
		"kubepods-besteffort-pod"+strings.ReplaceAll(uid, "-", "_")+".slice", "cri-containerd-"+id+".scope")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	t.Cleanup(func() {
		for d := dir; d != root; d = filepath.Dir(d) {
			_ = os.Remove(d) // only once empty: the child has exited
		}
	})
	cg, err := os.Open(dir)
	require.NoError(t, err)
	defer cg.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go serve(ln, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	const script = `
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print("connected", flush=True)
sys.stdin.readline()
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
print("closed", flush=True)
sys.stdin.readline()
`
	cmd := exec.Command("/usr/bin/python3", "-c", script, fmt.Sprint(ln.Addr().(*net.TCPAddr).Port))
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd())}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	out := bufio.NewScanner(stdout)
	require.True(t, out.Scan())
	require.Equal(t, "connected", out.Text())

	// The resolver is the real one, reading the child's cgroup; no
	// kubelet here, so it names the pod by UID and the container by id.
	resolver, err := podjoin.New()
	require.NoError(t, err)
	h := start(t, WithPageCache(false), WithFileSyscalls(false), WithResolver(resolver))
	_, err = io.WriteString(stdin, "\n")
	require.NoError(t, err)
	require.True(t, out.Scan())
	require.Equal(t, "closed", out.Text())

	pod := []attribute.KeyValue{semconv.K8sPodUID.String(uid), semconv.ContainerID.String(id),
		semconv.XpuscopeTCPResetDirection.String(semconv.ResetSent), semconv.XpuscopeTCPRole.String(semconv.TCPRoleUnknown)}
	eventually(t, 10*time.Second, func() (bool, string) {
		n := h.total(t, semconv.XpuscopeTCPResets.Name, pod...)
		return n == 1, fmt.Sprintf("%d resets sent in the pod; all: %v", n, testutil.Collect(t, h.reader).Find(semconv.XpuscopeTCPResets.Name))
	})
	assert.Equal(t, int64(0), h.total(t, semconv.XpuscopeTCPResets.Name, semconv.K8sPodUID.String(uid),
		semconv.XpuscopeTCPResetDirection.String(semconv.ResetReceived)), "the test's end is in no pod")
}
