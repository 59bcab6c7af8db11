package drmfdinfo_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/drmfdinfo"
	"github.com/xpuscope/xpuscope/internal/drmfdinfo/drmfdinfotest"
)

// What the drivers write, line for line as their show_fdinfo callbacks
// print it (format strings quoted in parse.go's package comment).
const (
	i915Info = "pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t1057\n" +
		"drm-driver:\ti915\ndrm-client-id:\t53\ndrm-pdev:\t0000:03:00.0\n" +
		"drm-total-system0:\t4 KiB\ndrm-shared-system0:\t0\ndrm-active-system0:\t0\ndrm-resident-system0:\t4 KiB\ndrm-purgeable-system0:\t0\n" +
		"drm-total-local0:\t1536 MiB\ndrm-shared-local0:\t0\ndrm-active-local0:\t0\ndrm-resident-local0:\t1024 MiB\ndrm-purgeable-local0:\t0\n" +
		"drm-engine-render:\t26352860434 ns\ndrm-engine-copy:\t0 ns\ndrm-engine-video:\t1000 ns\ndrm-engine-capacity-video:\t2\ndrm-engine-video-enhance:\t0 ns\ndrm-engine-compute:\t0 ns\n"
	xeInfo = "pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t1076\n" +
		"drm-driver:\txe\ndrm-client-id:\t12\ndrm-pdev:\t0000:03:00.0\n" +
		"drm-total-system:\t0\ndrm-shared-system:\t0\ndrm-active-system:\t0\ndrm-resident-system:\t0\ndrm-purgeable-system:\t0\n" +
		"drm-total-vram0:\t29488 KiB\ndrm-shared-vram0:\t0\ndrm-active-vram0:\t0\ndrm-resident-vram0:\t29488 KiB\ndrm-purgeable-vram0:\t0\n" +
		"drm-cycles-rcs:\t28257900\ndrm-total-cycles-rcs:\t7655183225\n" +
		"drm-cycles-bcs:\t0\ndrm-total-cycles-bcs:\t7655183225\n" +
		"drm-cycles-ccs:\t1000\ndrm-total-cycles-ccs:\t7655183225\ndrm-engine-capacity-ccs:\t4\n"
	// amdgpu before drm_print_memory_stats: "drm-memory-gtt: \t" has a
	// space before the tab; amd-* keys are not drm- keys.
	amdInfo = "pos:\t0\nflags:\t02100002\nmnt_id:\t24\nino:\t1096\n" +
		"pasid:\t32770\ndrm-driver:\tamdgpu\ndrm-pdev:\t0000:0c:00.0\ndrm-client-id:\t43\n" +
		"drm-memory-vram:\t2048 KiB\ndrm-memory-gtt: \t8 KiB\ndrm-memory-cpu: \t0 KiB\n" +
		"amd-evicted-vram:\t0 KiB\namd-requested-vram:\t2048 KiB\n" +
		"drm-engine-gfx:\t1157896 ns\ndrm-engine-compute:\t40 ns\n"
	// A descriptor of NVIDIA's open nvidia-drm: no show_fdinfo, the VFS's
	// lines alone.
	nvidiaInfo = "pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t981\n"
)

func TestParseI915(t *testing.T) {
	var c drmfdinfo.Client
	drmfdinfo.Parse([]byte(i915Info), &c)
	require.True(t, c.IsDRM())
	assert.Equal(t, "i915", c.Driver.String())
	assert.Equal(t, "0000:03:00.0", c.PDev.String())
	assert.True(t, c.HasID)
	assert.Equal(t, uint64(53), c.ID)
	require.Equal(t, 5, c.NEngines)
	r, ok := c.Engine("render")
	require.True(t, ok)
	assert.Equal(t, drmfdinfo.Engine{Name: r.Name, Busy: 26352860434, Capacity: 1, HasBusy: true}, *r)
	v, _ := c.Engine("video")
	assert.Equal(t, uint32(2), v.Capacity)
	assert.Equal(t, uint64(1000), v.Busy)
	_, ok = c.Engine("video-enhance")
	assert.True(t, ok)
	l, ok := c.Region("local0")
	require.True(t, ok)
	assert.Equal(t, uint64(1536<<20), l.Total)
	assert.Equal(t, uint64(1024<<20), l.Resident)
	s, _ := c.Region("system0")
	assert.Equal(t, uint64(4096), s.Resident)
}

func TestParseXe(t *testing.T) {
	var c drmfdinfo.Client
	drmfdinfo.Parse([]byte(xeInfo), &c)
	assert.Equal(t, "xe", c.Driver.String())
	rcs, ok := c.Engine("rcs")
	require.True(t, ok)
	assert.True(t, rcs.Cycles && rcs.HasTotal && rcs.HasBusy)
	assert.Equal(t, uint64(28257900), rcs.Busy)
	assert.Equal(t, uint64(7655183225), rcs.Total)
	ccs, _ := c.Engine("ccs")
	assert.Equal(t, uint32(4), ccs.Capacity)
	vram, _ := c.Region("vram0")
	assert.Equal(t, uint64(29488<<10), vram.Resident)
	assert.Equal(t, 3, c.NEngines, "no other engine")
}

func TestParseAMDAndNVIDIA(t *testing.T) {
	var c drmfdinfo.Client
	drmfdinfo.Parse([]byte(amdInfo), &c)
	assert.Equal(t, "amdgpu", c.Driver.String())
	assert.Equal(t, uint64(43), c.ID)
	gtt, ok := c.Region("gtt")
	require.True(t, ok, "the key with a space before its tab")
	assert.Equal(t, uint64(8<<10), gtt.Resident, "drm-memory- is drm-resident-'s alias")
	gfx, _ := c.Engine("gfx")
	assert.Equal(t, uint64(1157896), gfx.Busy)
	assert.Equal(t, 2, c.NEngines)

	drmfdinfo.Parse([]byte(nvidiaInfo), &c)
	assert.False(t, c.IsDRM(), "nvidia-drm writes no drm- keys")
}

func TestParseOddValues(t *testing.T) {
	var c drmfdinfo.Client
	drmfdinfo.Parse([]byte("drm-driver:\txe\n"+
		"drm-engine-render:\t12 us\n"+ // a unit the specification does not give engines
		"drm-total-vram0:\t3 GiB\n"+ // nor memory
		"drm-resident-vram0:\t99999999999999999999 MiB\n"+ // overflows
		"drm-engine-capacity-ccs:\t0\n"+ // zero capacity is not allowed
		"drm-client-id:\tx\n"+
		"drm-cycles-ccs:\t-5\n"+
		"no colon here\n"+
		"drm-\n"), &c)
	assert.True(t, c.IsDRM())
	assert.False(t, c.HasID)
	for i := range c.NEngines {
		assert.False(t, c.Engines[i].HasBusy, c.Engines[i].Name.String())
	}
	ccs, ok := c.Engine("ccs")
	if ok {
		assert.Equal(t, uint32(1), ccs.Capacity)
	}
	v, ok := c.Region("vram0")
	if ok {
		assert.False(t, v.HasTotal || v.HasResident)
	}

	// Bounds: more engines and regions than kept, names longer than kept.
	var b strings.Builder
	b.WriteString("drm-driver:\t" + strings.Repeat("d", 100) + "\n")
	for i := range 40 {
		b.WriteString("drm-engine-e" + strings.Repeat("x", i) + ":\t1 ns\n")
		b.WriteString("drm-resident-r" + strings.Repeat("x", i) + ":\t1\n")
	}
	drmfdinfo.Parse([]byte(b.String()), &c)
	assert.Equal(t, drmfdinfo.MaxEngines, c.NEngines)
	assert.Equal(t, drmfdinfo.MaxRegions, c.NRegions)
	assert.Len(t, c.Driver.String(), drmfdinfo.MaxName)
}

func TestParseAllocatesNothing(t *testing.T) {
	var c drmfdinfo.Client
	b := []byte(i915Info + xeInfo)
	assert.Zero(t, testing.AllocsPerRun(100, func() { drmfdinfo.Parse(b, &c) }))
}

func TestIsDRMNode(t *testing.T) {
	for target, want := range map[string]bool{
		"/dev/dri/renderD128":           true,
		"/dev/dri/card0":                true,
		"/host/dev/dri/card12":          true,
		"/dev/dri/by-path/pci-card":     false,
		"/dev/dri/cardX":                false,
		"/dev/nvidia0":                  false,
		"socket:[4242]":                 false,
		"/dev/dri/renderD128 (deleted)": false,
		"/dri/card0":                    true,
		"dri/card0":                     false,
	} {
		assert.Equal(t, want, drmfdinfo.IsDRMNode([]byte(target)), target)
	}
}

func client(t *testing.T, info string) *drmfdinfo.Client {
	var c drmfdinfo.Client
	drmfdinfo.Parse([]byte(info), &c)
	require.True(t, c.IsDRM(), info)
	return &c
}

// One client (pdev, client id) held by two descriptors of one process and
// by a descriptor its child inherited counts once, under the first
// process; a counter going backwards is held; a new client gives no ratio
// on its first scan.
func TestTracker(t *testing.T) {
	var tr drmfdinfo.Tracker
	pdev := "0000:03:00.0"
	scan := func(now int64, adds ...func()) []drmfdinfo.Usage {
		tr.Begin()
		for _, a := range adds {
			a()
		}
		return tr.End()
	}
	add := func(pid, fd int, info string, now int64) func() {
		return func() { tr.Add(pid, fd, client(t, info), now) }
	}
	sec := int64(1e9)

	// Scan 1: the first sight of every counter: no ratios.
	u := scan(0,
		add(100, 5, drmfdinfotest.I915(pdev, 7, 1e9, 0, 0, 0, 0, 1<<30, 4096), 0),
		add(100, 6, drmfdinfotest.I915(pdev, 7, 1e9, 0, 0, 0, 0, 1<<30, 4096), 0),
		add(200, 5, drmfdinfotest.I915(pdev, 7, 1e9, 0, 0, 0, 0, 1<<30, 4096), 0),
		add(300, 3, drmfdinfotest.Xe("0000:04:00.0", 7, 1000, 0, 0, 0, 0, 0, 4, 64<<20, 0), 0),
	)
	require.Len(t, u, 2, "pdev 0000:03:00.0 client 7 once; the xe client with the same id on another device apart")
	assert.Equal(t, 100, u[0].PID)
	assert.Equal(t, uint64(1<<30), u[0].Memory, "local0 alone")
	assert.Equal(t, uint64(64<<20), u[1].Memory, "vram0 alone")
	for _, x := range u {
		for i := range x.NEngines {
			assert.False(t, x.Engines[i].Has, "no ratio on a first read")
		}
	}

	// Scan 2, a second later: render busy 0.5 s; video 1 s over capacity 2;
	// the xe client's ccs 2000 of 4000 cycles over capacity 4.
	u = scan(sec,
		add(100, 5, drmfdinfotest.I915(pdev, 7, 1.5e9, 0, 1e9, 0, 0, 1<<30, 4096), sec),
		add(300, 3, drmfdinfotest.Xe("0000:04:00.0", 7, 5000, 0, 0, 0, 0, 2000, 4, 64<<20, 0), sec),
	)
	require.Len(t, u, 2)
	ratios := func(x drmfdinfo.Usage) map[string]float64 {
		m := map[string]float64{}
		for i := range x.NEngines {
			if x.Engines[i].Has {
				m[x.Engines[i].Name.String()] = x.Engines[i].Ratio
			}
		}
		return m
	}
	assert.InDeltaMapValues(t, map[string]float64{"render": 0.5, "copy": 0, "video": 0.5, "video-enhance": 0, "compute": 0}, ratios(u[0]), 1e-9)
	assert.InDeltaMapValues(t, map[string]float64{"rcs": 0, "bcs": 0, "vcs": 0, "vecs": 0, "ccs": 0.125}, ratios(u[1]), 1e-9)

	// Scan 3: render went backwards (held at 1.5e9: 0 busy), then scan 4
	// catches up beyond it.
	u = scan(2*sec, add(100, 5, drmfdinfotest.I915(pdev, 7, 1.2e9, 0, 1e9, 0, 0, 1<<30, 4096), 2*sec))
	assert.InDelta(t, 0.0, ratios(u[0])["render"], 1e-9, "held at the larger previous value")
	u = scan(3*sec, add(100, 5, drmfdinfotest.I915(pdev, 7, 1.75e9, 0, 1e9, 0, 0, 1<<30, 4096), 3*sec))
	assert.InDelta(t, 0.25, ratios(u[0])["render"], 1e-9, "measured from the held value")
	assert.Equal(t, 1, tr.Len(), "the xe client, not seen in scan 3, is forgotten")

	// A ratio above 1 (a counter jump) is capped.
	u = scan(4*sec, add(100, 5, drmfdinfotest.I915(pdev, 7, 10e9, 0, 1e9, 0, 0, 1<<30, 4096), 4*sec))
	assert.Equal(t, 1.0, ratios(u[0])["render"])
}

func TestTrackerAllocatesNothingOnceWarm(t *testing.T) {
	var tr drmfdinfo.Tracker
	cs := []*drmfdinfo.Client{
		client(t, drmfdinfotest.I915("0000:03:00.0", 1, 1, 0, 0, 0, 0, 1<<20, 0)),
		client(t, drmfdinfotest.Xe("0000:04:00.0", 2, 10, 1, 0, 0, 0, 0, 1, 1<<20, 0)),
	}
	now := int64(0)
	round := func() {
		now += 1e9
		tr.Begin()
		for i, c := range cs {
			tr.Add(100+i, 3, c, now)
		}
		tr.End()
	}
	round()
	assert.Zero(t, testing.AllocsPerRun(100, round))
}

// Scan reads a fixture procfs: DRM descriptors are read, others skipped,
// and a process whose fd directory cannot be listed is counted.
func TestScanFixture(t *testing.T) {
	root := t.TempDir()
	drmfdinfotest.Write(t, root,
		drmfdinfotest.Proc{PID: 100, FDs: []drmfdinfotest.FD{
			{N: 0, Target: "/dev/pts/0"},
			{N: 3, Target: "socket:[4242]"},
			{N: 5, Target: "/dev/dri/renderD128", Info: xeInfo},
			{N: 6, Target: "/dev/dri/card0", Info: xeInfo}, // the same client, dup'ed
		}},
		drmfdinfotest.Proc{PID: 200, FDs: []drmfdinfotest.FD{
			{N: 4, Target: "/dev/dri/renderD129", Info: i915Info},
			{N: 7, Target: "/dev/dri/renderD130", Info: nvidiaInfo}, // no drm- keys
			{N: 8, Target: "/dev/dri/renderD131"},                   // fdinfo gone meanwhile
		}},
	)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "self"), 0o755)) // not a pid
	require.NoError(t, os.MkdirAll(filepath.Join(root, "300"), 0o755))  // no fd directory: gone

	s := &drmfdinfo.Scanner{Root: root}
	type hit struct {
		pid, fd int
		driver  string
	}
	var hits []hit
	st, err := s.Scan(func(pid, fd int, c *drmfdinfo.Client) { hits = append(hits, hit{pid, fd, c.Driver.String()}) })
	require.NoError(t, err)
	assert.ElementsMatch(t, []hit{{100, 5, "xe"}, {100, 6, "xe"}, {200, 4, "i915"}}, hits)
	assert.Equal(t, 2, st.Processes)
	assert.Equal(t, 7, st.FDs)
	assert.Equal(t, 3, st.Clients)

	_, err = (&drmfdinfo.Scanner{Root: filepath.Join(root, "missing")}).Scan(func(int, int, *drmfdinfo.Client) {})
	assert.ErrorContains(t, err, "missing")
}

// The real /proc: this test holds a descriptor of a file named like a
// render node (no GPU here). Scan finds it among this process's
// descriptors and reads its fdinfo, which has the VFS's lines and no
// drm- key, so it is no client.
func TestScanRealProc(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dri")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	node := filepath.Join(dir, "renderD128")
	require.NoError(t, os.WriteFile(node, nil, 0o644))
	f, err := os.Open(node)
	require.NoError(t, err)
	defer f.Close()

	s := &drmfdinfo.Scanner{Root: "/proc"}
	clients := 0
	st, err := s.Scan(func(int, int, *drmfdinfo.Client) { clients++ })
	require.NoError(t, err)
	assert.Zero(t, clients, "no GPU here: no DRM client")
	assert.Positive(t, st.Processes)
	assert.Greater(t, st.FDs, 2)

	// The scan allocates nothing once its buffers exist.
	allocs := testing.AllocsPerRun(5, func() { _, _ = s.Scan(func(int, int, *drmfdinfo.Client) {}) })
	assert.Zero(t, allocs)
}

// FuzzParse: whatever an fdinfo file holds, Parse keeps within its bounds
// and what it keeps is consistent.
func FuzzParse(f *testing.F) {
	for _, s := range []string{i915Info, xeInfo, amdInfo, nvidiaInfo, "drm-engine-capacity-x:\t65536\n", "drm-total-cycles-:\t1\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c drmfdinfo.Client
		drmfdinfo.Parse(b, &c)
		if c.NEngines < 0 || c.NEngines > drmfdinfo.MaxEngines || c.NRegions < 0 || c.NRegions > drmfdinfo.MaxRegions {
			t.Fatalf("counts out of bounds: %d engines, %d regions", c.NEngines, c.NRegions)
		}
		for i := range c.NEngines {
			e := &c.Engines[i]
			if e.Capacity == 0 || e.Capacity > 1<<16 || e.Name.Len == 0 || int(e.Name.Len) > drmfdinfo.MaxName {
				t.Fatalf("engine %d: %+v", i, *e)
			}
		}
		for i := range c.NRegions {
			if r := &c.Regions[i]; r.Name.Len == 0 || int(r.Name.Len) > drmfdinfo.MaxName {
				t.Fatalf("region %d: %+v", i, *r)
			}
		}
		// The tracker takes it twice without growing beyond one client.
		var tr drmfdinfo.Tracker
		for now := range int64(2) {
			tr.Begin()
			tr.Add(1, 1, &c, now*1e9)
			for _, u := range tr.End() {
				for i := range u.NEngines {
					if r := u.Engines[i].Ratio; r < 0 || r > 1 {
						t.Fatalf("ratio %v", r)
					}
				}
			}
		}
		if tr.Len() > 1 {
			t.Fatalf("%d clients kept", tr.Len())
		}
	})
}
