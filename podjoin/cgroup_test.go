package podjoin

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	id1   = "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
	id2   = "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d"
	uid1  = "e6ad2b47-524d-5472-b6fd-cd5deeb0e561"
	uid1_ = "e6ad2b47_524d_5472_b6fd_cd5deeb0e561"
)

func TestParseCgroup(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Cgroup
	}{
		{"v2 systemd containerd besteffort",
			"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uid1_ + ".slice/cri-containerd-" + id1 + ".scope\n",
			Cgroup{RuntimeContainerd, id1, uid1, QoSBestEffort}},
		{"v2 systemd crio burstable",
			"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uid1_ + ".slice/crio-" + id1 + ".scope",
			Cgroup{RuntimeCRIO, id1, uid1, QoSBurstable}},
		{"v2 systemd docker guaranteed",
			"0::/kubepods.slice/kubepods-pod" + uid1_ + ".slice/docker-" + id1 + ".scope",
			Cgroup{RuntimeDocker, id1, uid1, QoSGuaranteed}},
		{"cgroupfs burstable bare id",
			"0::/kubepods/burstable/pod" + uid1 + "/" + id1,
			Cgroup{"", id1, uid1, QoSBurstable}},
		{"cgroupfs besteffort crio",
			"0::/kubepods/besteffort/pod" + uid1 + "/crio-" + id1,
			Cgroup{RuntimeCRIO, id1, uid1, QoSBestEffort}},
		{"cgroupfs guaranteed",
			"0::/kubepods/pod" + uid1 + "/" + id1,
			Cgroup{"", id1, uid1, QoSGuaranteed}},
		{"uid with underscores under cgroupfs too",
			"0::/kubepods/pod" + uid1_ + "/" + id1,
			Cgroup{"", id1, uid1, QoSGuaranteed}},
		{"kubelet cgroup root",
			"0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod" + uid1_ + ".slice/cri-containerd-" + id1 + ".scope",
			Cgroup{RuntimeContainerd, id1, uid1, QoSBurstable}},
		{"pod only (conmon)",
			"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uid1_ + ".slice/crio-conmon-" + id1 + ".scope",
			Cgroup{"", "", uid1, QoSBurstable}},
		{"pod slice, pod-level process",
			"0::/kubepods/besteffort/pod" + uid1,
			Cgroup{"", "", uid1, QoSBestEffort}},
		{"docker cgroupfs", "0::/docker/" + id1, Cgroup{RuntimeDocker, id1, "", ""}},
		{"docker scope", "0::/system.slice/docker-" + id1 + ".scope", Cgroup{RuntimeDocker, id1, "", ""}},
		{"docker in docker: innermost", "0::/docker/" + id1 + "/docker/" + id2, Cgroup{RuntimeDocker, id2, "", ""}},
		{"in a pod: first container under the pod",
			"0::/system.slice/docker-" + id2 + ".scope/kubepods/pod" + uid1 + "/" + id1 + "/docker/" + id2,
			Cgroup{"", id1, uid1, QoSGuaranteed}},
		{"container's own child cgroup",
			"0::/kubepods/burstable/pod" + uid1 + "/" + id1 + "/init.scope",
			Cgroup{"", id1, uid1, QoSBurstable}},
		{"podman", "0::/machine.slice/libpod-" + id1 + ".scope/container", Cgroup{RuntimePodman, id1, "", ""}},
		{"podman pod is no Kubernetes pod",
			"0::/machine.slice/machine-libpod_pod_" + id2 + ".slice/libpod-" + id1 + ".scope",
			Cgroup{RuntimePodman, id1, "", ""}},
		{"static pod uid", "0::/kubepods/burstable/poda81259cef8e959c624df1d456e5d3297/" + id1,
			Cgroup{"", id1, "a81259cef8e959c624df1d456e5d3297", QoSBurstable}},
		{"v1: first line with the most", "5:cpu:/\n4:memory:/kubepods/pod" + uid1 + "\n3:pids:/kubepods/pod" + uid1 + "/" + id1 + "\n2:blkio:/docker/" + id2 + "\n",
			Cgroup{"", id1, uid1, QoSGuaranteed}},
		{"v1: container beats pod-only", "4:memory:/kubepods/pod" + uid1 + "\n2:blkio:/docker/" + id2 + "\n",
			Cgroup{RuntimeDocker, id2, "", ""}},
		{"qos outside a pod means nothing", "0::/besteffort/" + id1, Cgroup{"", id1, "", ""}},
		{"relative path from another cgroup namespace",
			"0::/../../../besteffort/pod" + uid1 + "/" + id1,
			Cgroup{"", id1, uid1, QoSBestEffort}},
		{"no container", "0::/user.slice/user-1000.slice/session-2.scope", Cgroup{}},
		{"root", "0::/", Cgroup{}},
		{"empty", "", Cgroup{}},
		{"upper-case id", "0::/docker/" + strings.ToUpper(id1), Cgroup{}},
		{"short id", "0::/docker/" + id1[:63], Cgroup{}},
		{"long id", "0::/docker/" + id1 + "0", Cgroup{}},
		{"bad uid", "0::/kubepods/podnot-a-uid/" + id1, Cgroup{"", id1, "", ""}},
		{"uid with upper case", "0::/kubepods/pod" + strings.ToUpper(uid1) + "/" + id1, Cgroup{"", id1, "", ""}},
		{"uid dashes misplaced", "0::/kubepods/pode6ad2b475-24d-5472-b6fd-cd5deeb0e561/" + id1, Cgroup{"", id1, "", ""}},
		{"kubepods is not a pod", "0::/kubepods.slice", Cgroup{}},
		{"hierarchy id not a number", "x::/docker/" + id1, Cgroup{}},
		{"relative path", "0::docker/" + id1, Cgroup{}},
		{"missing fields", "0:/docker/" + id1, Cgroup{}},
		{"CRLF is not a path", "0::/docker/" + id1 + "\r\n", Cgroup{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ParseCgroup([]byte(tc.in)), "ParseCgroup(%q)", tc.in)
		})
	}
}

// Lines past the cap are not read.
func TestParseCgroupLineCap(t *testing.T) {
	in := strings.Repeat("1:cpu:/\n", maxCgroupLines) + "0::/docker/" + id1 + "\n"
	require.Equal(t, Cgroup{}, ParseCgroup([]byte(in)), "line past the cap was read")
	in = strings.Repeat("1:cpu:/\n", maxCgroupLines-1) + "0::/docker/" + id1 + "\n"
	got := ParseCgroup([]byte(in))
	require.Equal(t, id1, got.ContainerID, "last line within the cap not read: %+v", got)
}
