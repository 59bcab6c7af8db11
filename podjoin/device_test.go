package podjoin

import (
	"fmt"
	"testing"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

func TestNormalizeDeviceID(t *testing.T) {
	const gpu = "GPU-8e2a4c1f-3b7d-4e11-9f0a-2c5d6e7f8a9b"
	const mig = "MIG-1f2e3d4c-5b6a-7988-a7b6-c5d4e3f2a1b0"
	for in, want := range map[string]string{
		gpu:                           gpu,
		gpu + "::0":                   gpu,
		gpu + "::12":                  gpu,
		" " + gpu + "::3\n":           gpu,
		mig:                           mig,
		mig + "::2":                   mig,
		"MIG-GPU-" + gpu[4:] + "/1/0": "MIG-GPU-" + gpu[4:] + "/1/0",
		gpu + "::":                    gpu + "::",
		gpu + "::x":                   gpu + "::x",
		"::3":                         "::3",
		"0000:03:00.0":                "0000:03:00.0",
		"0000:03:00.0-slice-2":        "0000:03:00.0",
		"0000:03:00.0-slice-":         "0000:03:00.0-slice-",
		"card0-0":                     "card0",
		"card12-7":                    "card12",
		"card-0":                      "card-0",
		"card0-x":                     "card0-x",
		"cardx-0":                     "cardx-0",
		"renderD128":                  "renderD128",
		"":                            "",
	} {
		if got := NormalizeDeviceID(in); got != want {
			t.Errorf("NormalizeDeviceID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestGPUResource(t *testing.T) {
	for name, want := range map[string]bool{
		"nvidia.com/gpu": true, "nvidia.com/mig-1g.10gb": true, "nvidia.com/gpu.shared": true,
		"amd.com/gpu": true, "gpu.intel.com/i915": true, "gpu.intel.com/xe": true,
		"gpu.intel.com/i915_monitoring": false, "gpu.intel.com/xe_monitoring": false,
		"example.com/nic": false, "cpu": false, "": false, "notnvidia.com/gpu": false,
	} {
		if got := gpuResource(name); got != want {
			t.Errorf("gpuResource(%q) = %v", name, got)
		}
	}
}

// pod builds a PodResources: containers given as name, resource, ids….
func pod(ns, name string, containers ...[]string) *podresourcesv1.PodResources {
	p := &podresourcesv1.PodResources{Namespace: ns, Name: name}
	for _, c := range containers {
		p.Containers = append(p.Containers, &podresourcesv1.ContainerResources{
			Name:    c[0],
			Devices: []*podresourcesv1.ContainerDevices{{ResourceName: c[1], DeviceIds: c[2:]}},
		})
	}
	return p
}

func TestIndexDevices(t *testing.T) {
	d := indexDevices([]*podresourcesv1.PodResources{
		pod("ml", "train", []string{"trainer", "nvidia.com/gpu", "GPU-a", "GPU-b"}),
		pod("ts", "one", []string{"c", "nvidia.com/gpu", "GPU-s::0"}),
		pod("ts", "two", []string{"c", "nvidia.com/gpu", "GPU-s::1"}),
		pod("init", "p", []string{"init", "nvidia.com/gpu", "GPU-i"}, []string{"app", "nvidia.com/gpu", "GPU-i"}),
		pod("same", "p", []string{"c", "nvidia.com/gpu", "GPU-r::0", "GPU-r::1"}),
		pod("dup", "x", []string{"c", "nvidia.com/gpu", "GPU-d"}),
		pod("dup2", "x", []string{"c", "nvidia.com/gpu", "GPU-d"}),
		pod("net", "p", []string{"c", "example.com/nic", "nic0"}),
		pod("mon", "p", []string{"c", "gpu.intel.com/i915_monitoring", "all"}),
		pod("empty", "p", []string{"c", "nvidia.com/gpu", ""}),
		pod("none", "p"),
	})
	want := map[string]Owner{
		"GPU-a": {Namespace: "ml", Pod: "train", Container: "trainer"},
		"GPU-b": {Namespace: "ml", Pod: "train", Container: "trainer"},
		"GPU-i": {Namespace: "init", Pod: "p"},
		"GPU-r": {Namespace: "same", Pod: "p", Container: "c"},
	}
	if fmt.Sprint(d.owners) != fmt.Sprint(want) {
		t.Errorf("owners %v\nwant %v", d.owners, want)
	}
	if d.allocated != 6 || d.shared != 2 || d.pods != 11 || d.truncated {
		t.Errorf("allocated %d shared %d pods %d truncated %v, want 6 2 11 false", d.allocated, d.shared, d.pods, d.truncated)
	}
}

func TestIndexDevicesCaps(t *testing.T) {
	var pods []*podresourcesv1.PodResources
	for i := range maxPods + 1 {
		pods = append(pods, pod("ns", fmt.Sprint("p", i), []string{"c", "nvidia.com/gpu", fmt.Sprint("GPU-", i)}))
	}
	d := indexDevices(pods)
	if d.pods != maxPods || !d.truncated || len(d.owners) != maxPods {
		t.Fatalf("pods %d owners %d truncated %v", d.pods, len(d.owners), d.truncated)
	}
	ids := []string{"c", "nvidia.com/gpu"}
	for i := range maxDevices + 1 {
		ids = append(ids, fmt.Sprint("GPU-", i))
	}
	d = indexDevices([]*podresourcesv1.PodResources{pod("ns", "p", ids)})
	if len(d.owners) != maxDevices || !d.truncated {
		t.Fatalf("devices %d truncated %v", len(d.owners), d.truncated)
	}
}

func TestBackoff(t *testing.T) {
	const i = 8e9
	for failures, want := range map[int]float64{1: 2e9, 2: 4e9, 3: 8e9, 4: 16e9, 5: 32e9, 6: 32e9, 50: 32e9} {
		if got := backoff(i, failures); float64(got) != want {
			t.Errorf("backoff after %d failures = %v, want %v", failures, got, want)
		}
	}
}

func TestPodLogNames(t *testing.T) {
	for name, ok := range map[string]bool{
		"ml_trainer-0_e6ad2b47-524d-5472-b6fd-cd5deeb0e561":       true,
		"kube-system_etcd-node1_a81259cef8e959c624df1d456e5d3297": true,
		"ml_trainer-0_not-a-uid":                                  false,
		"ml_e6ad2b47-524d-5472-b6fd-cd5deeb0e561":                 false,
		"_trainer_e6ad2b47-524d-5472-b6fd-cd5deeb0e561":           false,
		"a_b_c_e6ad2b47-524d-5472-b6fd-cd5deeb0e561":              false,
	} {
		p, uid, got := parsePodLogDir(name)
		if got != ok {
			t.Errorf("parsePodLogDir(%q) = %v %q %v", name, p, uid, got)
		}
	}
	id, c, ok := parseContainerLogName("trainer-0_ml_trainer-" + id1 + ".log")
	if !ok || id != id1 || c != (containerName{podName{"ml", "trainer-0"}, "trainer"}) {
		t.Errorf("got %q %+v %v", id, c, ok)
	}
	for _, name := range []string{
		"trainer-0_ml_trainer-" + id1,               // no .log
		"trainer-0_ml_trainer-" + id1[:60] + ".log", // cut id
		"trainer-0_ml_trainer_" + id1 + ".log",      // no dash before the id
		"trainer-0_ml-" + id1 + ".log",              // no container
		"trainer-0_ml__x-" + id1 + ".log",
		"_ml_trainer-" + id1 + ".log",
		id1 + ".log",
	} {
		if _, _, ok := parseContainerLogName(name); ok {
			t.Errorf("parseContainerLogName(%q) accepted", name)
		}
	}
}
