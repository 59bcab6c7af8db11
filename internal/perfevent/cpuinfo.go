package perfevent

import (
	"bufio"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// CPU vendors as CPUID (and /proc/cpuinfo's vendor_id) spell them.
const (
	VendorIntel = "GenuineIntel"
	VendorAMD   = "AuthenticAMD"
	VendorHygon = "HygonGenuine"
)

// CPUID is what identifies a processor generation: the vendor, family and
// model that CPUID reports and /proc/cpuinfo shows (family and model
// already combined with their extended fields, as the kernel does).
type CPUID struct {
	Vendor   string
	Family   int
	Model    int
	Stepping int
	// Hypervisor is set when the CPU says it runs under a hypervisor
	// (the hypervisor flag): a virtual machine, whose hypervisor rarely
	// passes the uncore PMUs through.
	Hypervisor bool
}

func (c CPUID) String() string {
	return fmt.Sprintf("%s family %#x model %#x stepping %d", c.Vendor, c.Family, c.Model, c.Stepping)
}

// maxCPUInfoLine bounds one line of /proc/cpuinfo (the flags line is
// about 1.5 KB).
const maxCPUInfoLine = 16 << 10

// ReadCPUInfo reads the first processor's identity from the cpuinfo file
// of a procfs (fsys rooted at its mount point).
func ReadCPUInfo(fsys fs.FS) (CPUID, error) {
	f, err := fsys.Open("cpuinfo")
	if err != nil {
		return CPUID{}, fmt.Errorf("read cpuinfo: %w", err)
	}
	defer f.Close()
	var c CPUID
	seen := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), maxCPUInfoLine)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			if seen > 0 {
				break // the end of the first processor's block
			}
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "vendor_id":
			c.Vendor = v
			seen++
		case "cpu family":
			c.Family, err = strconv.Atoi(v)
			seen++
		case "model":
			c.Model, err = strconv.Atoi(v)
			seen++
		case "stepping":
			c.Stepping, _ = strconv.Atoi(v)
		case "flags":
			for fl := range strings.FieldsSeq(v) {
				if fl == "hypervisor" {
					c.Hypervisor = true
				}
			}
		}
		if err != nil {
			return CPUID{}, fmt.Errorf("cpuinfo: %s %.20q is not a number", k, v)
		}
	}
	if err := sc.Err(); err != nil {
		return CPUID{}, fmt.Errorf("read cpuinfo: %w", err)
	}
	if c.Vendor == "" || seen < 3 {
		return CPUID{}, fmt.Errorf("cpuinfo has no vendor_id, cpu family and model (not x86?)")
	}
	return c, nil
}
