// Package drmfdinfotest writes procfs fixture trees of DRM clients for
// the tests of package drmfdinfo and of the gpu Source: processes whose
// fd/<n> links point at /dev/dri nodes (or elsewhere) and whose
// fdinfo/<n> files say what a driver writes, in the formats of the
// kernel's i915 and xe fdinfo callbacks.
package drmfdinfotest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FD is one descriptor of a fixture process.
type FD struct {
	N      int
	Target string // the fd link's target: /dev/dri/renderD128, socket:[42]
	Info   string // the fdinfo file; "" writes none
}

// Proc is one fixture process.
type Proc struct {
	PID int
	Exe string // the exe link's target; "" writes none
	FDs []FD
}

// Write writes procs under root (a procfs root), replacing the fdinfo
// files and links it writes.
func Write(t testing.TB, root string, procs ...Proc) {
	t.Helper()
	for _, p := range procs {
		dir := filepath.Join(root, strconv.Itoa(p.PID))
		for _, d := range []string{"fd", "fdinfo"} {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if p.Exe != "" {
			link := filepath.Join(dir, "exe")
			_ = os.Remove(link)
			if err := os.Symlink(p.Exe, link); err != nil {
				t.Fatal(err)
			}
		}
		for _, fd := range p.FDs {
			link := filepath.Join(dir, "fd", strconv.Itoa(fd.N))
			_ = os.Remove(link)
			if err := os.Symlink(fd.Target, link); err != nil {
				t.Fatal(err)
			}
			if fd.Info != "" {
				info := filepath.Join(dir, "fdinfo", strconv.Itoa(fd.N))
				_ = os.Remove(info)
				if err := os.WriteFile(info, []byte(fd.Info), 0o444); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// Header is the part of every fdinfo file the VFS writes before the
// driver's keys.
func Header(n int) string {
	return fmt.Sprintf("pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t%d\n", 1000+n)
}

// I915 is an i915 client's fdinfo (i915_drm_client.c): busy ns per engine
// class, the capacity of the video class (two engines here), and the
// memory stats of system0 and local0.
func I915(pdev string, id uint64, render, copy, video, videoEnhance, compute, local0, system0 uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "drm-driver:\ti915\ndrm-client-id:\t%d\ndrm-pdev:\t%s\n", id, pdev)
	for _, r := range []struct {
		name string
		v    uint64
	}{{"system0", system0}, {"local0", local0}} {
		fmt.Fprintf(&b, "drm-total-%s:\t%s\ndrm-shared-%s:\t0\ndrm-active-%s:\t0\ndrm-resident-%s:\t%s\ndrm-purgeable-%s:\t0\n",
			r.name, Size(r.v), r.name, r.name, r.name, Size(r.v), r.name)
	}
	fmt.Fprintf(&b, "drm-engine-render:\t%d ns\ndrm-engine-copy:\t%d ns\ndrm-engine-video:\t%d ns\ndrm-engine-capacity-video:\t2\ndrm-engine-video-enhance:\t%d ns\ndrm-engine-compute:\t%d ns\n",
		render, copy, video, videoEnhance, compute)
	return b.String()
}

// Xe is an xe client's fdinfo (xe_drm_client.c): busy cycles per engine
// class with the GPU timestamp as drm-total-cycles, the compute class's
// capacity where above one, and the memory stats of system, gtt and
// vram0.
func Xe(pdev string, id, ts, rcs, bcs, vcs, vecs, ccs uint64, ccsCapacity int, vram0, system uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "drm-driver:\txe\ndrm-client-id:\t%d\ndrm-pdev:\t%s\n", id, pdev)
	for _, r := range []struct {
		name string
		v    uint64
	}{{"system", system}, {"gtt", 0}, {"vram0", vram0}} {
		fmt.Fprintf(&b, "drm-total-%s:\t%s\ndrm-shared-%s:\t0\ndrm-active-%s:\t0\ndrm-resident-%s:\t%s\ndrm-purgeable-%s:\t0\n",
			r.name, Size(r.v), r.name, r.name, r.name, Size(r.v), r.name)
	}
	for _, e := range []struct {
		name string
		v    uint64
	}{{"rcs", rcs}, {"bcs", bcs}, {"vcs", vcs}, {"vecs", vecs}, {"ccs", ccs}} {
		fmt.Fprintf(&b, "drm-cycles-%s:\t%d\ndrm-total-cycles-%s:\t%d\n", e.name, e.v, e.name, ts)
		if e.name == "ccs" && ccsCapacity > 1 {
			fmt.Fprintf(&b, "drm-engine-capacity-ccs:\t%d\n", ccsCapacity)
		}
	}
	return b.String()
}

// Size writes a byte count as the kernel's drm_fdinfo_print_size does:
// in the largest of bytes, KiB and MiB that divides it, with a space
// before the unit.
func Size(v uint64) string {
	units := []string{"", " KiB", " MiB"}
	u := 0
	for u < len(units)-1 && v != 0 && v%1024 == 0 {
		v /= 1024
		u++
	}
	return strconv.FormatUint(v, 10) + units[u]
}
