package bpfsource

import (
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// testSpec is an object of the shape Load expects: a ring buffer, and two
// uprobe programs and a tracepoint one that return 0.
func testSpec() *ebpf.CollectionSpec {
	ret0 := asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}
	prog := func(name, section string, typ ebpf.ProgramType) *ebpf.ProgramSpec {
		return &ebpf.ProgramSpec{Name: name, SectionName: section, Type: typ, License: "GPL", Instructions: ret0}
	}
	return &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{"events": {Name: "events", Type: ebpf.RingBuf, MaxEntries: 4096}},
		Programs: map[string]*ebpf.ProgramSpec{
			"probe":     prog("probe", "uprobe", ebpf.Kprobe),
			"probe_ret": prog("probe_ret", "uretprobe", ebpf.Kprobe),
			"bench":     prog("bench", "uprobe", ebpf.Kprobe),
			"tp":        prog("tp", "raw_tracepoint/sys_enter", ebpf.RawTracepoint),
		},
	}
}

// Options that name what the object lacks are errors before anything is
// loaded.
func TestLoadRefusesWhatTheObjectLacks(t *testing.T) {
	for name, o := range map[string]LoadOptions{
		"program":          {Programs: []string{"probe", "nope"}},
		"multi, not named": {Programs: []string{"probe"}, UprobeMulti: []string{"probe_ret"}},
		"multi, no uprobe": {Programs: []string{"tp"}, UprobeMulti: []string{"tp"}},
		"ring":             {Ring: "records", RingBytes: 8192},
		"wakeup variable":  {WakeupBytes: 1024},
	} {
		_, err := Load(testSpec(), o)
		assert.Error(t, err, name)
	}
}

// Load loads the programs named and no other, sizes the ring, makes the
// uprobe programs named uprobe_multi ones, and leaves the spec as it was.
func TestLoad(t *testing.T) {
	testutil.Native(t, "the kernel's BPF and uprobes")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "loading BPF programs needs root")
	}
	spec := testSpec()
	progs, err := Load(spec, LoadOptions{Ring: "events", RingBytes: 1 << 16, Programs: []string{"probe", "probe_ret", "tp"},
		UprobeMulti: []string{"probe", "probe_ret"}})
	require.NoError(t, err)
	defer progs.Close()
	assert.ElementsMatch(t, []string{"probe", "probe_ret", "tp"}, slices.Collect(maps.Keys(progs.coll.Programs)))
	assert.Equal(t, uint32(1<<16), progs.coll.Maps["events"].MaxEntries())
	assert.Len(t, spec.Programs, 4, "the caller's spec changed")
	assert.Equal(t, uint32(4096), spec.Maps["events"].MaxEntries, "the caller's spec changed")
	assert.Equal(t, ebpf.AttachNone, spec.Programs["probe"].AttachType, "the caller's spec changed")
}

// A map Replace names is used in place of the object's own: two objects
// share it.
func TestLoadReplace(t *testing.T) {
	testutil.Native(t, "the kernel's BPF and uprobes")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "loading BPF programs needs root")
	}
	first, err := Load(testSpec(), LoadOptions{Programs: []string{"tp"}})
	require.NoError(t, err)
	defer first.Close()
	shared := first.coll.Maps["events"]
	second, err := Load(testSpec(), LoadOptions{Programs: []string{"tp"}, Replace: map[string]*ebpf.Map{"events": shared}})
	require.NoError(t, err)
	defer second.Close()
	a, err := shared.Info()
	require.NoError(t, err)
	b, err := second.coll.Maps["events"].Info()
	require.NoError(t, err)
	id, ok := a.ID()
	require.True(t, ok)
	other, _ := b.ID()
	assert.Equal(t, id, other, "the second object's map is the first's")
}
