package podjoin_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/podjoin"
)

// Resolving a process of a fixture procfs tree: a containerd container of
// a BestEffort pod, started with a TRACEPARENT. On a node, leave
// WithProcRoot and WithLogRoot out (or point them at the host's /proc and
// /var/log mounted into the agent) and keep the default kubelet socket.
func ExampleResolver_Process() {
	dir, err := os.MkdirTemp("", "podjoin-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	const (
		uid = "e6ad2b47-524d-5472-b6fd-cd5deeb0e561"
		id  = "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
	)
	files := map[string]string{
		"proc/4242/stat":   "4242 (python3) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 7331 1000000 100\n",
		"proc/4242/cgroup": "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pode6ad2b47_524d_5472_b6fd_cd5deeb0e561.slice/cri-containerd-" + id + ".scope\n",
		"proc/4242/environ": "HOME=/root\x00OPENAI_API_KEY=sk-never-read\x00" +
			"TRACEPARENT=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\x00OTEL_SERVICE_NAME=trainer\x00",
		"log/pods/ml_trainer-0_" + uid + "/trainer/0.log":    "",
		"log/containers/trainer-0_ml_trainer-" + id + ".log": "",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			log.Fatal(err)
		}
	}

	r, err := podjoin.New(
		podjoin.WithProcRoot(filepath.Join(dir, "proc")),
		podjoin.WithLogRoot(filepath.Join(dir, "log")),
		podjoin.WithKubeletSocket(""), // no kubelet here
	)
	if errors.Is(err, xpuscope.ErrUnavailable) {
		log.Printf("pod labels off: %v", err)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	p := r.Process(4242)
	for _, kv := range p.Attributes() {
		fmt.Printf("%s=%s\n", kv.Key, kv.Value.Emit())
	}
	fmt.Println("runtime:", p.Runtime, "QoS:", p.QoSClass)
	fmt.Println("parent span:", p.SpanContext.TraceID(), p.SpanContext.SpanID(), p.SpanContext.IsSampled())
	// Output:
	// k8s.namespace.name=ml
	// k8s.pod.name=trainer-0
	// k8s.pod.uid=e6ad2b47-524d-5472-b6fd-cd5deeb0e561
	// k8s.container.name=trainer
	// container.id=ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb
	// service.name=trainer
	// runtime: containerd QoS: BestEffort
	// parent span: 4bf92f3577b34da6a3ce929d0e0e4736 00f067aa0ba902b7 true
}

// The cgroup parser on its own.
func ExampleParseCgroup() {
	c := podjoin.ParseCgroup([]byte("0::/kubepods/burstable/podf4e2b41a-8589-5dac-abeb-5439ed42d10a/crio-3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d\n"))
	fmt.Println(c.Runtime, c.PodUID, c.QoSClass)
	// Output: cri-o f4e2b41a-8589-5dac-abeb-5439ed42d10a Burstable
}

// A device-level series gets pod labels only when one pod holds the
// device: both spellings of a time-sliced replica name the same GPU.
func ExampleNormalizeDeviceID() {
	fmt.Println(podjoin.NormalizeDeviceID("GPU-8e2a4c1f-3b7d-4e11-9f0a-2c5d6e7f8a9b::3"))
	fmt.Println(podjoin.NormalizeDeviceID("MIG-1f2e3d4c-5b6a-7988-a7b6-c5d4e3f2a1b0"))
	fmt.Println(podjoin.NormalizeDeviceID("card1-0"))
	// Output:
	// GPU-8e2a4c1f-3b7d-4e11-9f0a-2c5d6e7f8a9b
	// MIG-1f2e3d4c-5b6a-7988-a7b6-c5d4e3f2a1b0
	// card1
}
