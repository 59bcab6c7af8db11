package amdsysfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/amdsysfs"
	"github.com/xpuscope/xpuscope/internal/amdsysfs/amdsysfstest"
)

func TestParseInt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"63\n", 63, true},
		{"-12000\n", -12000, true},
		{"  7 \n", 7, true},
		{"0", 0, true},
		{"", 0, false},
		{"\n", 0, false},
		{"n/a\n", 0, false},
		{"12 13\n", 0, false},
		{"99999999999999999999\n", 0, false},
	} {
		got, err := amdsysfs.ParseInt([]byte(tc.in))
		assert.Equal(t, tc.ok, err == nil, "%q: %v", tc.in, err)
		assert.Equal(t, tc.want, got, "%q", tc.in)
		if err != nil {
			assert.ErrorIs(t, err, amdsysfs.ErrInvalid)
		}
	}
}

func TestParseUintAndHex(t *testing.T) {
	v, err := amdsysfs.ParseUint([]byte("68702699520\n"))
	assert.NoError(t, err)
	assert.Equal(t, uint64(68702699520), v)
	_, err = amdsysfs.ParseUint([]byte("-1\n"))
	assert.ErrorIs(t, err, amdsysfs.ErrInvalid)

	v, err = amdsysfs.ParseHex([]byte("a1b2c3d4e5f60718\n"))
	assert.NoError(t, err)
	assert.Equal(t, uint64(0xa1b2c3d4e5f60718), v)
	_, err = amdsysfs.ParseHex([]byte("0xzz\n"))
	assert.ErrorIs(t, err, amdsysfs.ErrInvalid)
}

func TestParseString(t *testing.T) {
	assert.Equal(t, "AMD Instinct MI210", amdsysfs.ParseString([]byte("AMD Instinct MI210\n")))
	assert.Equal(t, "first", amdsysfs.ParseString([]byte(" first \nsecond\n")))
	assert.Equal(t, "", amdsysfs.ParseString(nil))
	assert.Len(t, amdsysfs.ParseString([]byte(strings.Repeat("x", 1000))), 128)
}

func TestParseUevent(t *testing.T) {
	u := amdsysfs.ParseUevent([]byte("DRIVER=amdgpu\nPCI_CLASS=38000\nPCI_ID=1002:740F\nPCI_SLOT_NAME=0000:03:00.0\nno equals sign\nMODALIAS=pci:v1002\n"))
	assert.Equal(t, amdsysfs.Uevent{Driver: "amdgpu", PCIID: "1002:740F", PCISlot: "0000:03:00.0"}, u)
	assert.Equal(t, amdsysfs.Uevent{}, amdsysfs.ParseUevent([]byte("garbage")))
	// A device without a bound driver has no DRIVER line.
	assert.Equal(t, "", amdsysfs.ParseUevent([]byte("PCI_SLOT_NAME=0000:03:00.0\n")).Driver)
}

func TestParseProperties(t *testing.T) {
	p := amdsysfs.ParseProperties([]byte("simd_count 416\nsimd_per_cu 4\nmax_waves_per_simd 8\nwave_front_size 64\n" +
		"location_id 768\ndomain 1\nhive_id 0\nbad line\nunique_id notanumber\n"))
	addr, ok := p.PCIAddress()
	assert.True(t, ok)
	assert.Equal(t, "0001:03:00.0", addr)
	assert.Equal(t, 104, p.CUs())
	assert.Equal(t, 4*8*64, p.ThreadsPerCU())
	assert.Zero(t, amdsysfs.ParseProperties([]byte("simd_per_cu 4\nmax_waves_per_simd 8\n")).ThreadsPerCU(), "no wavefront size")
	assert.Zero(t, amdsysfs.ParseProperties([]byte("simd_per_cu 4\nmax_waves_per_simd 99999999\nwave_front_size 64\n")).ThreadsPerCU(), "implausible")

	// No domain (kernels before 4.19): domain 0.
	addr, ok = amdsysfs.ParseProperties([]byte("location_id 49409\n")).PCIAddress()
	assert.True(t, ok)
	assert.Equal(t, "0000:c1:00.1", addr)

	// No location: no address; no simd_per_cu: no CU count.
	p = amdsysfs.ParseProperties([]byte("simd_count 416\n"))
	_, ok = p.PCIAddress()
	assert.False(t, ok)
	assert.Zero(t, p.CUs())
	_, ok = amdsysfs.ParseProperties([]byte("location_id 65536\n")).PCIAddress()
	assert.False(t, ok, "a location id is 16 bits")
}

func TestPCIAddress(t *testing.T) {
	assert.Equal(t, "0000:0c:00.0", amdsysfs.PCIAddress(0, 0x0c00))
	assert.Equal(t, "0001:c1:1f.7", amdsysfs.PCIAddress(1, 0xc1<<8|0x1f<<3|7))
	assert.Equal(t, "10000:00:00.0", amdsysfs.PCIAddress(0x10000, 0))
	for s, ok := range map[string]bool{
		"0000:03:00.0": true, "ffff:ff:1f.7": true,
		"0000:03:20.0": false, "0000:03:00.8": false, "0000:03:00.0 ": false,
		"0000:03:0G.0": false, "0000:3:00.0": false, "0000:03:00:0": false, "": false,
		"0000:03:00.A": false, "0000:AB:00.0": false,
		"10000:00:02.0": true, "ffffffff:00:00.0": true, "100000000:00:00.0": false, "000:00:00.0": false,
	} {
		assert.Equal(t, ok, amdsysfs.ValidPCIAddress(s), "%q", s)
	}
}

func TestReadBoundsAndErrors(t *testing.T) {
	fsys := fstest.MapFS{
		"page":  {Data: make([]byte, amdsysfs.MaxFileSize)},
		"big":   {Data: make([]byte, amdsysfs.MaxFileSize+1)},
		"value": {Data: []byte("42\n")},
		"junk":  {Data: []byte("forty-two\n")},
	}
	faulty := &amdsysfstest.Faulty{FS: fsys}
	faulty.Fail("value", syscall.EAGAIN)
	r := &amdsysfs.Reader{FS: faulty}

	b, err := r.Read("page")
	assert.NoError(t, err)
	assert.Len(t, b, amdsysfs.MaxFileSize)
	_, err = r.Read("big")
	assert.ErrorIs(t, err, amdsysfs.ErrTooLarge)
	assert.Equal(t, "too_large", amdsysfs.ErrorName(err))

	_, err = r.Int("value")
	assert.ErrorIs(t, err, syscall.EAGAIN)
	assert.Contains(t, err.Error(), "value")
	assert.Equal(t, "EAGAIN", amdsysfs.ErrorName(err))
	faulty.Fail("value", nil)
	v, err := r.Int("value")
	assert.NoError(t, err)
	assert.Equal(t, int64(42), v)

	_, err = r.Uint("junk")
	assert.ErrorIs(t, err, amdsysfs.ErrInvalid)
	assert.Contains(t, err.Error(), "junk")
	assert.Equal(t, "invalid_data", amdsysfs.ErrorName(err))

	_, err = r.Int("missing")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Equal(t, "ENOENT", amdsysfs.ErrorName(err))
	assert.Equal(t, "EIO", amdsysfs.ErrorName(&fs.PathError{Op: "read", Path: "x", Err: syscall.EIO}))
	assert.Equal(t, "other", amdsysfs.ErrorName(errors.New("x")))
}

// A real directory read through os.DirFS, as the Source does, including
// sysfs's symbolic links: class/drm/card0 points into /sys/devices.
func TestCardsThroughSymlinks(t *testing.T) {
	root := t.TempDir()
	dev := filepath.Join(root, "devices/pci0000:00/0000:00:01.1/0000:03:00.0")
	require.NoError(t, os.MkdirAll(filepath.Join(dev, "drm/card0"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dev, "hwmon/hwmon4"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dev, "uevent"), []byte("DRIVER=amdgpu\nPCI_ID=1002:73BF\nPCI_SLOT_NAME=0000:03:00.0\n"), 0o644))
	require.NoError(t, os.Symlink("../../../0000:03:00.0", filepath.Join(dev, "drm/card0/device")))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "class/drm"), 0o755))
	require.NoError(t, os.Symlink("../../devices/pci0000:00/0000:00:01.1/0000:03:00.0/drm/card0", filepath.Join(root, "class/drm/card0")))

	cards, err := amdsysfs.Cards(os.DirFS(root))
	require.NoError(t, err)
	assert.Equal(t, []amdsysfs.Card{{
		Name: "card0", Device: "class/drm/card0/device", PCIAddress: "0000:03:00.0", PCIID: "1002:73BF",
		Hwmon: "class/drm/card0/device/hwmon/hwmon4",
	}}, cards)
}

func TestOneGPU(t *testing.T) {
	fsys := amdsysfstest.Load(t, "one-gpu")
	cards, err := amdsysfs.Cards(fsys)
	require.NoError(t, err)
	require.Equal(t, []amdsysfs.Card{{
		Name: "card1", Device: "class/drm/card1/device", PCIAddress: "0000:03:00.0", PCIID: "1002:740F",
		Hwmon: "class/drm/card1/device/hwmon/hwmon2",
	}}, cards, "the BMC's ast card, the connector and the render node are left out")

	assert.Equal(t, [amdsysfs.NumTempSensors]string{
		"class/drm/card1/device/hwmon/hwmon2/temp1_input",
		"class/drm/card1/device/hwmon/hwmon2/temp2_input",
		"class/drm/card1/device/hwmon/hwmon2/temp3_input",
	}, amdsysfs.TempInputs(fsys, cards[0].Hwmon))

	nodes, err := amdsysfs.Topology(fsys)
	require.NoError(t, err)
	assert.Equal(t, []amdsysfs.Node{{ID: 1, GPUID: 48879, PCIAddress: "0000:03:00.0", CUs: 104, ThreadsPerCU: 2048}}, nodes)

	r := &amdsysfs.Reader{FS: fsys}
	usage, err := r.Processes([]uint32{48879}, nil)
	require.NoError(t, err)
	assert.Equal(t, []amdsysfs.Usage{
		{PID: 4242, GPUID: 48879, VRAM: 8 << 30, HasVRAM: true, CUs: 52, HasCUs: true},
		{PID: 5151, GPUID: 48879, VRAM: 1 << 30, HasVRAM: true},
		{PID: 6000, GPUID: 48879, HasVRAM: true, HasCUs: true},
	}, usage)
}

func TestEightGPUs(t *testing.T) {
	fsys := amdsysfstest.Load(t, "eight-gpus")
	cards, err := amdsysfs.Cards(fsys)
	require.NoError(t, err)
	want := []string{"0000:0c:00.0", "0000:22:00.0", "0000:38:00.0", "0000:5c:00.0", "0000:9f:00.0", "0000:af:00.0", "0000:bf:00.0", "0000:df:00.0"}
	var got []string
	for _, c := range cards {
		got = append(got, c.PCIAddress)
	}
	assert.Equal(t, want, got, "cards in PCI order, whatever their numbers")
	assert.Equal(t, "card2", cards[0].Name)

	nodes, err := amdsysfs.Topology(fsys)
	require.NoError(t, err)
	require.Len(t, nodes, 8, "CPU nodes are left out")
	gpuIDs := []uint32{2453, 45723, 11023, 60410, 7771, 38112, 52001, 19876}
	for _, n := range nodes {
		k := slices.Index(want, n.PCIAddress)
		require.GreaterOrEqual(t, k, 0, n.PCIAddress)
		assert.Equal(t, gpuIDs[k], n.GPUID, "node %d", n.ID)
		assert.Equal(t, 304, n.CUs)
		assert.Equal(t, 2048, n.ThreadsPerCU)
		assert.Equal(t, 9-k, n.ID)
	}

	r := &amdsysfs.Reader{FS: fsys}
	usage, err := r.Processes(gpuIDs, nil)
	require.NoError(t, err)
	assert.Len(t, usage, 8+8+1)
	bad := 0
	for _, u := range usage {
		if u.PID == 7200 {
			bad++
			assert.ErrorIs(t, u.Err, amdsysfs.ErrInvalid)
			assert.False(t, u.HasVRAM)
			assert.Equal(t, gpuIDs[1], u.GPUID)
			continue
		}
		assert.NoError(t, u.Err)
		assert.True(t, u.HasVRAM && u.HasCUs)
	}
	assert.Equal(t, 1, bad)
}

func TestNoDRMNoKFD(t *testing.T) {
	empty := fstest.MapFS{}
	_, err := amdsysfs.Cards(empty)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = amdsysfs.Topology(empty)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = (&amdsysfs.Reader{FS: empty}).Processes([]uint32{1}, nil)
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestTempInputsWithoutLabels(t *testing.T) {
	fsys := fstest.MapFS{"h/temp1_input": {Data: []byte("30000\n")}}
	assert.Equal(t, [amdsysfs.NumTempSensors]string{"h/temp1_input", "", ""}, amdsysfs.TempInputs(fsys, "h"))
	assert.Equal(t, [amdsysfs.NumTempSensors]string{}, amdsysfs.TempInputs(fstest.MapFS{}, "h"))
	assert.Equal(t, [amdsysfs.NumTempSensors]string{}, amdsysfs.TempInputs(fsys, ""))
	// An unknown label is skipped; the others keep their sensor.
	fsys = fstest.MapFS{
		"h/temp1_label": {Data: []byte("vddgfx\n")},
		"h/temp2_label": {Data: []byte("mem\n")},
	}
	assert.Equal(t, [amdsysfs.NumTempSensors]string{"", "", "h/temp2_input"}, amdsysfs.TempInputs(fsys, "h"))
}

func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"63\n", "-12000\n", "", "n/a", "+5", "0007"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, err := amdsysfs.ParseInt(b); err == nil {
			back, err := amdsysfs.ParseInt([]byte(strconv.FormatInt(v, 10)))
			if err != nil || back != v {
				require.NoError(t, err, "%q → %d does not round-trip", b, v)
				require.Equal(t, v, back, "%q → %d does not round-trip", b, v)
			}
		}
		if v, err := amdsysfs.ParseUint(b); err == nil {
			if s := strconv.FormatUint(v, 10); s == "" {
				require.NotEmpty(t, s, "empty")
			}
		}
		_, _ = amdsysfs.ParseHex(b)
	})
}

func FuzzParseUevent(f *testing.F) {
	f.Add([]byte("DRIVER=amdgpu\nPCI_ID=1002:740F\nPCI_SLOT_NAME=0000:03:00.0\n"))
	f.Add([]byte("DRIVER=\n=\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		u := amdsysfs.ParseUevent(b)
		for _, s := range []string{u.Driver, u.PCIID, u.PCISlot} {
			if len(s) > 128 || strings.ContainsAny(s, "\n") || strings.TrimSpace(s) != s || !utf8.ValidString(s) {
				require.LessOrEqual(t, len(s), 128, "%q: value %q is not one trimmed line of UTF-8", b, s)
				require.NotContains(t, s, "\n", "%q: value %q is not one trimmed line of UTF-8", b, s)
				require.Equal(t, strings.TrimSpace(s), s, "%q: value %q is not one trimmed line of UTF-8", b, s)
				require.True(t, utf8.ValidString(s), "%q: value %q is not one trimmed line of UTF-8", b, s)
			}
		}
	})
}

func FuzzParseProperties(f *testing.F) {
	for _, name := range []string{"one-gpu", "eight-gpus"} {
		for path, file := range amdsysfstest.Load(f, name) {
			if strings.HasSuffix(path, "/properties") {
				f.Add(file.Data)
			}
		}
	}
	f.Add([]byte("location_id 18446744073709551615\ndomain 99999999999\nsimd_per_cu 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := amdsysfs.ParseProperties(b)
		if addr, ok := p.PCIAddress(); ok && !amdsysfs.ValidPCIAddress(addr) {
			require.True(t, amdsysfs.ValidPCIAddress(addr), "%q: invalid address %q", b, addr)
		}
		if cus := p.CUs(); cus < 0 || cus > 1<<16 {
			require.GreaterOrEqual(t, cus, 0, "%q: CUs", b)
			require.LessOrEqual(t, cus, 1<<16, "%q: CUs", b)
		}
	})
}

// FuzzTree reads a whole sysfs tree, given as a txtar archive: whatever
// the files hold, discovery and the process reads must not fail other
// than by their documented errors, and what they return must be sane.
func FuzzTree(f *testing.F) {
	for _, name := range []string{"one-gpu", "eight-gpus"} {
		b, err := os.ReadFile(filepath.Join("testdata", name+".txtar"))
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte("-- class/drm/card0/device/uevent --\nDRIVER=amdgpu\nPCI_SLOT_NAME=0000:03:00.0\n-- class/drm/card0/device/hwmon/hwmonX/temp1_input --\n1\n"))
	f.Fuzz(func(t *testing.T, archive []byte) {
		fsys := amdsysfstest.Parse(archive)
		// An error is class/drm's own (missing, or a file): no cards then.
		cards, err := amdsysfs.Cards(fsys)
		if err != nil && cards != nil {
			require.Nil(t, cards, "Cards: %v", err)
		}
		for i, c := range cards {
			if !amdsysfs.ValidPCIAddress(c.PCIAddress) || (i > 0 && cards[i-1].PCIAddress >= c.PCIAddress) {
				require.True(t, amdsysfs.ValidPCIAddress(c.PCIAddress), "cards not valid, sorted and unique: %+v", cards)
				if i > 0 {
					require.Less(t, cards[i-1].PCIAddress, c.PCIAddress, "cards not valid, sorted and unique: %+v", cards)
				}
			}
			for _, in := range amdsysfs.TempInputs(fsys, c.Hwmon) {
				if in != "" && !strings.HasPrefix(in, c.Hwmon+"/temp") {
					require.True(t, strings.HasPrefix(in, c.Hwmon+"/temp"), "temperature input %q outside %q", in, c.Hwmon)
				}
			}
		}
		nodes, err := amdsysfs.Topology(fsys)
		if err != nil && nodes != nil {
			require.Nil(t, nodes, "Topology: %v", err)
		}
		var ids []uint32
		for _, n := range nodes {
			if n.GPUID == 0 || !amdsysfs.ValidPCIAddress(n.PCIAddress) || n.CUs < 0 {
				require.NotZero(t, n.GPUID, "bad node %+v", n)
				require.True(t, amdsysfs.ValidPCIAddress(n.PCIAddress), "bad node %+v", n)
				require.GreaterOrEqual(t, n.CUs, 0, "bad node %+v", n)
			}
			ids = append(ids, n.GPUID)
		}
		usage, err := (&amdsysfs.Reader{FS: fsys}).Processes(ids, nil)
		if err != nil && usage != nil {
			require.Nil(t, usage, "Processes: %v", err)
		}
		for _, u := range usage {
			if u.PID == 0 || !slices.Contains(ids, u.GPUID) || (u.Err == nil && !u.HasVRAM) {
				require.NotZero(t, u.PID, "bad usage %+v", u)
				require.Contains(t, ids, u.GPUID, "bad usage %+v", u)
				require.True(t, u.Err != nil || u.HasVRAM, "bad usage %+v", u)
			}
		}
	})
}
