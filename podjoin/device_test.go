package podjoin

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		assert.Equal(t, want, NormalizeDeviceID(in), "NormalizeDeviceID(%q)", in)
	}
}

func TestGPUResource(t *testing.T) {
	for name, want := range map[string]bool{
		"nvidia.com/gpu": true, "nvidia.com/mig-1g.10gb": true, "nvidia.com/gpu.shared": true,
		"amd.com/gpu": true, "gpu.intel.com/i915": true, "gpu.intel.com/xe": true,
		"gpu.intel.com/i915_monitoring": false, "gpu.intel.com/xe_monitoring": false,
		"example.com/nic": false, "cpu": false, "": false, "notnvidia.com/gpu": false,
	} {
		assert.Equal(t, want, gpuResource(name), "gpuResource(%q)", name)
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
	assert.Equal(t, fmt.Sprint(want), fmt.Sprint(d.owners), "owners")
	assert.Equal(t, 6, d.allocated, "allocated")
	assert.Equal(t, 2, d.shared, "shared")
	assert.Equal(t, 11, d.pods, "pods")
	assert.False(t, d.truncated, "truncated")
}

func TestIndexDevicesCaps(t *testing.T) {
	var pods []*podresourcesv1.PodResources
	for i := range maxPods + 1 {
		pods = append(pods, pod("ns", fmt.Sprint("p", i), []string{"c", "nvidia.com/gpu", fmt.Sprint("GPU-", i)}))
	}
	d := indexDevices(pods)
	require.Equal(t, maxPods, d.pods, "pods")
	require.True(t, d.truncated, "truncated, with %d pods", d.pods)
	require.Len(t, d.owners, maxPods, "owners")
	ids := []string{"c", "nvidia.com/gpu"}
	for i := range maxDevices + 1 {
		ids = append(ids, fmt.Sprint("GPU-", i))
	}
	d = indexDevices([]*podresourcesv1.PodResources{pod("ns", "p", ids)})
	require.Len(t, d.owners, maxDevices, "devices")
	require.True(t, d.truncated, "truncated, with %d devices", len(d.owners))
}

func TestBackoff(t *testing.T) {
	const i = 8e9
	for failures, want := range map[int]float64{1: 2e9, 2: 4e9, 3: 8e9, 4: 16e9, 5: 32e9, 6: 32e9, 50: 32e9} {
		assert.Equal(t, want, float64(backoff(i, failures)), "backoff after %d failures", failures)
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
		assert.Equal(t, ok, got, "parsePodLogDir(%q) = %v %q", name, p, uid)
	}
	id, c, ok := parseContainerLogName("trainer-0_ml_trainer-" + id1 + ".log")
	assert.True(t, ok, "got %q %+v", id, c)
	assert.Equal(t, id1, id)
	assert.Equal(t, containerName{podName{"ml", "trainer-0"}, "trainer"}, c)
	for _, name := range []string{
		"trainer-0_ml_trainer-" + id1,               // no .log
		"trainer-0_ml_trainer-" + id1[:60] + ".log", // cut id
		"trainer-0_ml_trainer_" + id1 + ".log",      // no dash before the id
		"trainer-0_ml-" + id1 + ".log",              // no container
		"trainer-0_ml__x-" + id1 + ".log",
		"_ml_trainer-" + id1 + ".log",
		id1 + ".log",
	} {
		_, _, ok := parseContainerLogName(name)
		assert.False(t, ok, "parseContainerLogName(%q) accepted", name)
	}
}
