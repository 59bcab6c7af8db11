package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// cString converts a NUL-terminated C char array, as NVML fills them, to a
// string. An array without NUL is taken whole.
func cString(b []int8) string {
	n := 0
	for n < len(b) && b[n] != 0 {
		n++
	}
	s := make([]byte, n)
	for i := range s {
		s[i] = byte(b[i])
	}
	return string(s)
}

// pciAddress normalises an NVML PCI bus id ("00000000:3B:00.0") to the
// sysfs form ("0000:3b:00.0") that other backends and Kubernetes use. An id
// it cannot parse is returned trimmed, ASCII-lower-cased and cut to 32
// bytes.
func pciAddress(busID string) string {
	busID = strings.TrimSpace(busID)
	domain, rest, ok1 := strings.Cut(busID, ":")
	bus, rest, ok2 := strings.Cut(rest, ":")
	dev, fn, ok3 := strings.Cut(rest, ".")
	if ok1 && ok2 && ok3 {
		d, e1 := strconv.ParseUint(domain, 16, 32)
		b, e2 := strconv.ParseUint(bus, 16, 8)
		v, e3 := strconv.ParseUint(dev, 16, 8)
		f, e4 := strconv.ParseUint(fn, 16, 8)
		if e1 == nil && e2 == nil && e3 == nil && e4 == nil && v < 32 && f < 8 {
			return fmt.Sprintf("%04x:%02x:%02x.%x", d, b, v, f)
		}
	}
	if len(busID) > maxBusID {
		busID = busID[:maxBusID]
	}
	return asciiLower(busID)
}

// maxBusID is the size of NVML's busId buffer.
const maxBusID = 32

// asciiLower lower-cases ASCII letters and leaves every other byte as it
// is (strings.ToLower would turn invalid UTF-8 into replacement runes).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// migProfile returns the profile of a MIG device from the name NVML gives
// it ("NVIDIA A100-SXM4-40GB MIG 1g.5gb" → "1g.5gb",
// "NVIDIA H100 80GB HBM3 MIG 1c.3g.40gb" → "1c.3g.40gb"), or "" when the
// name carries none.
func migProfile(name string) string {
	i := strings.LastIndex(name, " MIG ")
	if i < 0 {
		return ""
	}
	p := strings.TrimSpace(name[i+len(" MIG "):])
	if p == "" || len(p) > 32 {
		return ""
	}
	for _, r := range p {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r == '.' || r == '+') {
			return ""
		}
	}
	return p
}

// smShape is what an architecture's streaming multiprocessor holds.
type smShape struct{ coresPerSM, threadsPerSM int }

// smShapes maps a CUDA compute capability (major*10+minor) to its SM: FP32
// cores per SM (to turn NVML's core count into SMs) and maximum resident
// threads per SM (the CUDA programming guide's table).
var smShapes = map[int]smShape{
	60: {64, 2048}, 61: {128, 2048}, 62: {128, 2048},
	70: {64, 2048}, 72: {64, 2048}, 75: {64, 1024},
	80: {64, 2048}, 86: {128, 1536}, 87: {128, 1536}, 89: {128, 1536},
	90: {128, 2048}, 100: {128, 2048}, 120: {128, 1536},
}

// capacity returns the SM count and resident threads per SM of a GPU with
// the given compute capability and FP32 core count, or zeros when the
// architecture is not in the table or the count does not divide.
func capacity(major, minor, cores int) (sms, threadsPerSM int) {
	sh, ok := smShapes[major*10+minor]
	if !ok || cores <= 0 || cores%sh.coresPerSM != 0 {
		return 0, 0
	}
	return cores / sh.coresPerSM, sh.threadsPerSM
}
