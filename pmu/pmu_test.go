package pmu

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/perfevent"
	"github.com/xpuscope/xpuscope/internal/perfevent/perfeventtest"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// TestFixtures: on each machine's PMUs, New chooses the right kind of
// counter, encodes each event through the PMU's own formats (sysfs's
// events, else the table's), and opens one counter per event on each CPU
// of the PMU's cpumask, for every task.
func TestFixtures(t *testing.T) {
	type open struct {
		typ    uint32
		config uint64
		cpu    int
	}
	for _, tc := range []struct {
		fixture     string
		kind        kind
		family      string
		controllers int
		counters    int
		table       int
		some        []open // among the opens
		dirs        []string
	}{
		{fixture: "skx", kind: kindIMC, family: "Skylake-SP", controllers: 12, counters: 24,
			some: []open{{14, 0x0304, 0}, {14, 0x0c04, 28}, {19, 0x0304, 28}},
			dirs: []string{semconv.HWDirectionRead, semconv.HWDirectionWrite}},
		// The free-running byte counters, not the channels' CAS counts.
		{fixture: "icx", kind: kindIMCFree, family: "Ice Lake-SP", controllers: 8, counters: 16,
			some: []open{{40, 0x20ff, 0}, {43, 0x21ff, 40}},
			dirs: []string{semconv.HWDirectionRead, semconv.HWDirectionWrite}},
		// The free-running counters count cycles here: the channels.
		{fixture: "spr", kind: kindIMC, family: "Sapphire Rapids", controllers: 16, counters: 32,
			some: []open{{30, 0xcf05, 0}, {37, 0xf005, 56}},
			dirs: []string{semconv.HWDirectionRead, semconv.HWDirectionWrite}},
		// No CAS events in sysfs: the table's, through the
		// multi-range umask format.
		{fixture: "emr", kind: kindIMC, family: "Sapphire Rapids", controllers: 8, counters: 16, table: 16,
			some: []open{{30, 0xcf05, 0}, {37, 0xf005, 0}},
			dirs: []string{semconv.HWDirectionRead, semconv.HWDirectionWrite}},
		// Eight DRAM channels' events on the data fabric, one CPU per
		// socket; channel 4's event 0x107 puts its ninth bit in config
		// bit 32.
		{fixture: "zen3", kind: kindDF, family: "Zen 3", controllers: 16, counters: 16, table: 8,
			some: []open{{11, 0x3807, 0}, {11, 0x1_0000_3807, 64}, {11, 0x1_0000_38c7, 0}},
			dirs: []string{semconv.HWDirectionTotal}},
		{fixture: "zen4", kind: kindUMC, family: "Zen 4", controllers: 24, counters: 48, table: 48,
			some: []open{{13, 0x10a, 0}, {13, 0x20a, 0}, {36, 0x20a, 96}},
			dirs: []string{semconv.HWDirectionRead, semconv.HWDirectionWrite}},
		// Without UMC PMUs, the fabric's per-CS beats, the 12-bit umask
		// split over config bits 8-15 and 24-27.
		{fixture: "zen4_df", kind: kindDF, family: "Zen 4", controllers: 12, counters: 24, table: 24,
			some: []open{{11, 0x0700fe1f, 0}, {11, 0x0700ff1f, 0}, {11, 0x2_0700_fedf, 0}},
			dirs: []string{semconv.HWDirectionRead, semconv.HWDirectionWrite}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			src, f, _, _ := start(t, tc.fixture)
			st := src.Status()
			assert.Equal(t, tc.kind.String(), st.Kind)
			assert.Equal(t, tc.family, st.Family)
			assert.Len(t, st.Controllers, tc.controllers)
			assert.Equal(t, tc.counters, st.Counters)
			assert.Equal(t, tc.counters, st.Expected)
			assert.False(t, st.Partial, "%v", st.Problems)
			assert.Equal(t, tc.table, st.TableEvents)
			assert.Empty(t, st.Skipped)
			var got []open
			for _, a := range f.opens {
				got = append(got, open{a.Type, a.Configs[perfevent.Config], a.CPU})
				assert.Equal(t, -1, a.PID, "uncore PMUs are opened for every task")
				assert.Zero(t, a.Configs[perfevent.Config1]|a.Configs[perfevent.Config2])
			}
			assert.Len(t, got, tc.counters)
			for _, o := range tc.some {
				assert.Contains(t, got, o, "opened %#x on type %d CPU %d", o.config, o.typ, o.cpu)
			}
			var dirs []string
			for _, c := range st.Controllers {
				for _, e := range c.Events {
					dirs = append(dirs, strings.Fields(e)[0])
				}
			}
			slices.Sort(dirs)
			assert.Equal(t, tc.dirs, slices.Compact(dirs))
			assert.NotEmpty(t, st.Describe())
		})
	}
}

// TestSockets: each controller is on the socket of the CPU its PMU
// counts on.
func TestSockets(t *testing.T) {
	src, _, _, _ := start(t, "zen4")
	for _, c := range src.Status().Controllers {
		n := pmuIndex(c.Name)
		want := 0
		if n >= 12 {
			want = 1
		}
		assert.Equal(t, want, c.Socket, c.Name)
	}
}

// TestVirtualMachine: on a VM's PMUs, New says it is unavailable and
// why, naming what it found.
func TestVirtualMachine(t *testing.T) {
	tree := perfeventtest.Write(t, "vm")
	_, _, err := startOn(t, tree, newFakeOpener())
	require.ErrorIs(t, err, xpuscope.ErrUnavailable)
	for _, want := range []string{"no memory-controller PMU", "found breakpoint, msr, software, tracepoint, uprobe", "virtual machine", "hypervisor"} {
		assert.Contains(t, err.Error(), want)
	}
}

// TestThisMachine: New on this machine's own sysfs and kernel. Here, a
// VM with no uncore PMU, it is unavailable and says so; on a machine
// with one, it starts or says which privilege it lacks.
func TestThisMachine(t *testing.T) {
	src, err := New(WithMeterProvider(nil), withManualPoll())
	if err != nil {
		require.ErrorIs(t, err, xpuscope.ErrUnavailable, "not a fault: %v", err)
		t.Logf("here: %v", err)
		names, lerr := perfevent.ListPMUs(os.DirFS("/sys"))
		require.NoError(t, lerr)
		memory := slices.ContainsFunc(names, func(n string) bool { _, ok := pmuKind(n); return ok })
		if !memory {
			assert.Contains(t, err.Error(), "no memory-controller PMU")
			assert.Contains(t, err.Error(), "found "+strings.Join(names, ", "))
		}
		return
	}
	require.NoError(t, src.Close())
}

// TestUnknownFamily: an AMD CPU in no row of the table, with UMC PMUs
// that describe no events, has nothing to count, and says why.
func TestUnknownFamily(t *testing.T) {
	tree := perfeventtest.Write(t, "zen4")
	info := "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 27\nmodel\t\t: 1\nstepping\t: 0\n\n"
	tree.Set(t, "proc/cpuinfo", &info)
	_, _, err := startOn(t, tree, newFakeOpener())
	require.ErrorIs(t, err, xpuscope.ErrUnavailable)
	assert.Contains(t, err.Error(), "AuthenticAMD family 0x1b model 0x1 stepping 0 is in no row of the table")

	// An Intel CPU the table does not know still counts what sysfs
	// describes, and says the family is unknown.
	skx := perfeventtest.Write(t, "skx")
	info = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 250\nstepping\t: 0\n\n"
	skx.Set(t, "proc/cpuinfo", &info)
	src, reader, err := startOn(t, skx, newFakeOpener())
	require.NoError(t, err)
	assert.Equal(t, 24, src.Status().Counters)
	pts := testutil.Collect(t, reader)
	assert.Equal(t, 1.0, pts.One(t, semconv.XpuscopePMUFamilyUnknown.Name).Value)
}

// TestMalformed: broken sysfs entries are skipped and counted; the table
// fills what it can, the rest leaves the coverage short and the Source
// partial, never silently low.
func TestMalformed(t *testing.T) {
	src, f, _, reader := start(t, "malformed")
	st := src.Status()
	assert.True(t, st.Partial)
	// uncore_imc_1's format cannot place an event: 2 events × 2 CPUs
	// not counted; uncore_imc_5 has no type.
	assert.Equal(t, 16, st.Counters)
	assert.Equal(t, 20, st.Expected)
	assert.Len(t, f.opens, 16)
	assert.Len(t, st.Skipped, 7)
	// uncore_imc_2's read, _3's write and _4's write (a unit of cycles)
	// come from the table.
	assert.Equal(t, 3, st.TableEvents)
	joined := strings.Join(st.Problems, "\n")
	assert.Contains(t, joined, "uncore_imc_1 cas_count_read: not counted")
	assert.Contains(t, joined, "uncore_imc_5")

	src.poll()
	pts := testutil.Collect(t, reader)
	assert.Equal(t, 7.0, pts.One(t, semconv.XpuscopePMUSysfsSkipped.Name).Value)
	for _, sock := range []int{0, 1} {
		p := pts.One(t, semconv.XpuscopePMUCoverage.Name, semconv.HWCPUSocket.Int(sock))
		assert.InDelta(t, 8.0/10.0, p.Value, 1e-9, "socket %d: 8 of its 10 known counters", sock)
	}
}

// TestCounting: bytes are the change of each count times the bytes a
// count is (64 for a CAS, from sysfs's 6.103515625e-5 MiB, applied once),
// multiplexed counts are scaled by enabled over running, and the series
// are per socket, controller and direction.
func TestCounting(t *testing.T) {
	src, f, _, reader := start(t, "skx")
	rd := f.counter(14, 0x0304, 0) // uncore_imc_0, socket 0, read
	wr := f.counter(14, 0x0c04, 0)
	rd28 := f.counter(14, 0x0304, 28) // socket 1
	require.NotNil(t, rd)
	require.NotNil(t, wr)
	require.NotNil(t, rd28)

	rd.add(1000, 1e9, 1e9)
	wr.add(10, 1e9, 1e9)
	rd28.add(1000, 1e9, 250e6) // on a counter a quarter of the time
	src.poll()
	pts := testutil.Collect(t, reader)
	io := func(sock int, dir string) float64 {
		return pts.One(t, semconv.HWCPUMemoryIO.Name, semconv.HWCPUSocket.Int(sock),
			semconv.HWCPUMemoryController.String("uncore_imc_0"), semconv.HWDirection.String(dir)).Value
	}
	assert.Equal(t, 64000.0, io(0, semconv.HWDirectionRead), "1000 CAS × 64 bytes, the scale applied once")
	assert.Equal(t, 640.0, io(0, semconv.HWDirectionWrite))
	assert.Equal(t, 256000.0, io(1, semconv.HWDirectionRead), "1000 counted in a quarter of the time: 4000 × 64")

	// A second interval adds its change only.
	rd.add(500, 1e9, 1e9)
	src.poll()
	pts = testutil.Collect(t, reader)
	assert.Equal(t, 96000.0, io(0, semconv.HWDirectionRead))
	assert.Equal(t, 640.0, io(0, semconv.HWDirectionWrite), "no change: nothing added")

	// The running ratio of socket 1 was a quarter for the one counter
	// that ran; the others did not move.
	p := pts.Find(semconv.XpuscopePMURunningRatio.Name, semconv.HWCPUSocket.Int(0))
	require.Len(t, p, 1)
	assert.Equal(t, 1.0, p[0].Value)
	assert.Equal(t, 1.0, pts.One(t, semconv.XpuscopePMUCoverage.Name, semconv.HWCPUSocket.Int(0)).Value)
}

// TestMultiplexedInterval: an interval in which a counter was never on
// the hardware adds nothing rather than a guess, and the next one is
// scaled by its own times, not the cumulative ones.
func TestMultiplexedInterval(t *testing.T) {
	src, f, _, reader := start(t, "skx")
	rd := f.counter(15, 0x0304, 0) // uncore_imc_1
	rd.add(100, 1e9, 1e9)
	src.poll()
	rd.add(0, 1e9, 0) // enabled, never running
	src.poll()
	rd.add(100, 1e9, 5e8)
	src.poll()
	pts := testutil.Collect(t, reader)
	got := pts.One(t, semconv.HWCPUMemoryIO.Name, semconv.HWCPUSocket.Int(0),
		semconv.HWCPUMemoryController.String("uncore_imc_1"), semconv.HWDirection.String(semconv.HWDirectionRead)).Value
	assert.Equal(t, (100.0+200.0)*64, got, "100, then nothing, then 100 in half the time")
}

// TestPartialOpen: a PMU whose counters are taken by someone else leaves
// its controllers uncounted: the Source starts, says it is partial, and
// reports the coverage.
func TestPartialOpen(t *testing.T) {
	tree := perfeventtest.Write(t, "skx")
	f := newFakeOpener()
	f.refuse = func(a perfevent.Attr) error {
		if a.Type == 16 && a.CPU == 28 {
			return unix.EBUSY
		}
		return nil
	}
	src, reader, err := startOn(t, tree, f)
	require.NoError(t, err)
	st := src.Status()
	assert.True(t, st.Partial)
	assert.Equal(t, 22, st.Counters)
	assert.Equal(t, 24, st.Expected)
	assert.Contains(t, strings.Join(st.Problems, "\n"), "EBUSY")
	assert.Contains(t, st.Describe(), "PARTIAL")
	pts := testutil.Collect(t, reader)
	assert.Equal(t, 1.0, pts.One(t, semconv.XpuscopePMUCoverage.Name, semconv.HWCPUSocket.Int(0)).Value)
	assert.InDelta(t, 10.0/12.0, pts.One(t, semconv.XpuscopePMUCoverage.Name, semconv.HWCPUSocket.Int(1)).Value, 1e-9)

	// Once the counters are free, the next interval opens them.
	f.mu.Lock()
	f.refuse = nil
	f.mu.Unlock()
	src.poll()
	assert.False(t, src.Status().Partial)
	pts = testutil.Collect(t, reader)
	assert.Equal(t, 1.0, pts.One(t, semconv.XpuscopePMUCoverage.Name, semconv.HWCPUSocket.Int(1)).Value)
	assert.Equal(t, 2.0, pts.One(t, semconv.XpuscopePMUReopens.Name).Value)
}

// TestHotplug: when a PMU's cpumask changes (the CPU it counted on went
// offline and the kernel moved it to another of the socket), the
// counters follow it: closed on the old CPU, opened on the new, the
// series keeping their bytes. A read that fails is counted, and the
// counter opened again.
func TestHotplug(t *testing.T) {
	src, f, tree, reader := start(t, "skx", withRescan(1))
	old := f.counter(14, 0x0304, 28)
	require.NotNil(t, old)
	old.add(100, 1e9, 1e9)
	src.poll()

	pkg := "1\n"
	tree.Set(t, "sys/devices/system/cpu/cpu29/topology/physical_package_id", &pkg)
	mask := "0,29\n"
	tree.Set(t, "sys/bus/event_source/devices/uncore_imc_0/cpumask", &mask)
	src.poll() // reads, then rescans
	assert.Nil(t, f.counter(14, 0x0304, 28), "the counter on CPU 28 is closed")
	moved := f.counter(14, 0x0304, 29)
	require.NotNil(t, moved, "and one opened on CPU 29")
	moved.add(50, 1e9, 1e9)
	src.poll()

	pts := testutil.Collect(t, reader)
	got := pts.One(t, semconv.HWCPUMemoryIO.Name, semconv.HWCPUSocket.Int(1),
		semconv.HWCPUMemoryController.String("uncore_imc_0"), semconv.HWDirection.String(semconv.HWDirectionRead)).Value
	assert.Equal(t, 150.0*64, got, "the socket's series goes on across the move")
	assert.Equal(t, 2.0, pts.One(t, semconv.XpuscopePMUReopens.Name).Value, "read and write of uncore_imc_0 on CPU 29")
	assert.Equal(t, 24, src.Status().Counters)
	assert.Equal(t, 1.0, pts.One(t, semconv.XpuscopePMUCoverage.Name, semconv.HWCPUSocket.Int(1)).Value)

	// A read failure: counted by errno, the counter reopened next time.
	moved.failNext(unix.ENODEV)
	src.poll()
	src.poll()
	pts = testutil.Collect(t, reader)
	assert.Equal(t, 1.0, pts.One(t, semconv.XpuscopePMUReadErrors.Name, semconv.ErrorType.String("ENODEV")).Value)
	assert.Equal(t, 3.0, pts.One(t, semconv.XpuscopePMUReopens.Name).Value)
	assert.NotNil(t, f.counter(14, 0x0304, 29))
	assert.Equal(t, 24, src.Status().Counters)
}

// TestPrivilege: every open refused with EACCES is unavailable, and the
// error says which privilege is missing and what paranoid is set to.
func TestPrivilege(t *testing.T) {
	tree := perfeventtest.Write(t, "skx")
	f := newFakeOpener()
	f.refuse = func(perfevent.Attr) error { return unix.EACCES }
	_, _, err := startOn(t, tree, f)
	require.ErrorIs(t, err, xpuscope.ErrUnavailable)
	assert.Contains(t, err.Error(), "CAP_PERFMON")
	assert.Contains(t, err.Error(), "perf_event_paranoid is 2", "the fixture's procfs says 2")
	assert.ErrorIs(t, err, errNoCounter)
}

// TestRefusedConfig: every open refused with EINVAL for every task on a
// CPU means the kernel refused what we asked: a fault, not a soft skip.
func TestRefusedConfig(t *testing.T) {
	tree := perfeventtest.Write(t, "skx")
	f := newFakeOpener()
	f.refuse = func(perfevent.Attr) error { return unix.EINVAL }
	_, _, err := startOn(t, tree, f)
	require.Error(t, err)
	assert.False(t, errors.Is(err, xpuscope.ErrUnavailable), "%v", err)
	assert.Contains(t, err.Error(), "refused the event's configuration")
}

// TestUtilization: with a peak, each controller's bytes of the interval
// (both directions) over the peak for the interval's length.
func TestUtilization(t *testing.T) {
	src, f, _, reader := start(t, "skx", WithPeakBandwidth(128000))
	f.counter(14, 0x0304, 0).add(1000, 1e9, 1e9) // 64000 bytes read in 1 s
	f.counter(14, 0x0c04, 0).add(500, 1e9, 1e9)  // 32000 written
	src.poll()
	pts := testutil.Collect(t, reader)
	got := pts.One(t, semconv.HWCPUMemoryUtilization.Name, semconv.HWCPUSocket.Int(0), semconv.HWCPUMemoryController.String("uncore_imc_0"))
	assert.InDelta(t, 0.75, got.Value, 1e-9)

	_, _, _, reader = start(t, "skx")
	assert.Empty(t, testutil.Collect(t, reader).Find(semconv.HWCPUMemoryUtilization.Name), "no peak, no utilization")
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opt  Option
		want string
	}{
		{WithInterval(0), "pmu: WithInterval"},
		{WithSysfsRoot(""), "pmu: WithSysfsRoot"},
		{WithProcRoot(""), "pmu: WithProcRoot"},
		{WithPeakBandwidth(0), "pmu: WithPeakBandwidth"},
		{WithPeakBandwidth(-1), "pmu: WithPeakBandwidth"},
		{withRescan(0), "withRescan"},
	} {
		_, err := New(tc.opt)
		require.Error(t, err)
		assert.False(t, errors.Is(err, xpuscope.ErrUnavailable))
		assert.Contains(t, err.Error(), tc.want)
	}
	_, err := New(nil, WithSysfsRoot(t.TempDir()))
	assert.ErrorIs(t, err, xpuscope.ErrUnavailable, "a nil Option is ignored; an empty sysfs has no PMUs")
}

// TestClose: Close closes every counter, stops the goroutine, and is
// idempotent.
func TestClose(t *testing.T) {
	tree := perfeventtest.Write(t, "zen4")
	f := newFakeOpener()
	src, err := New(WithSysfsRoot(tree.Sys), WithProcRoot(tree.Proc), withOpener(f), WithInterval(10e6))
	require.NoError(t, err)
	require.NotEmpty(t, f.all())
	require.NoError(t, src.Close())
	assert.Empty(t, f.all(), "every counter closed")
	assert.NoError(t, src.Close())
}
