package intelpt

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/xpuscope/xpuscope/internal/perfevent"
)

// The files of a capture directory.
const (
	// TraceFile is the raw Intel PT packet stream: the AUX area's bytes
	// in the order the kernel wrote them, as libipt's ptdump and ptxed
	// read them (--pt).
	TraceFile = "trace.pt"
	// SidebandFile is the kernel's perf_event records of the capture,
	// each with its perf_event_header, as they were in the ring buffer:
	// PERF_RECORD_MMAP2, COMM, FORK, EXIT, SWITCH, ITRACE_START, AUX,
	// LOST, each with the sample_id fields of Manifest.SampleType. It is
	// what libipt's perf sideband reader takes (ptxed --pevent:primary).
	SidebandFile = "sideband.pevent"
	// ManifestFile is the Manifest, in JSON.
	ManifestFile = "capture.json"
)

// ManifestFormat names the capture directory's format, version included.
const ManifestFormat = "xpuscope.intelpt/1"

// Manifest describes a capture directory: what a decoder needs besides
// the trace and sideband.
type Manifest struct {
	Format string `json:"format"`
	// PMUType and Config are the intel_pt event's perf_event_attr.type
	// and .config; Terms the config as named format fields.
	PMUType uint32 `json:"pmu_type"`
	Config  string `json:"config"`
	Terms   string `json:"terms"`
	// MTCPeriod is the config's mtc_period (ptdump --mtc-freq), when
	// set.
	MTCPeriod *uint64 `json:"mtc_period,omitempty"`
	// SampleType is the sample_type of the sideband's sample_id fields
	// (ptxed --pevent:sample-type); sample_id_all is set.
	SampleType string `json:"sample_type"`
	// ExcludeKernel is set when only user space was traced.
	ExcludeKernel bool `json:"exclude_kernel"`
	// PID or CPU is the target; the other is -1.
	PID int `json:"pid"`
	CPU int `json:"cpu"`
	// Vendor, Family, Model and Stepping are the CPU's (ptdump --cpu
	// family/model/stepping).
	Vendor   string `json:"vendor"`
	Family   int    `json:"family"`
	Model    int    `json:"model"`
	Stepping int    `json:"stepping"`
	// TimeShift, TimeMult and TimeZero convert the sideband's times
	// from TSC ticks (ptxed --pevent:time-shift, --pevent:time-mult,
	// --pevent:time-zero); TimeValid is the kernel's cap_user_time_zero.
	TimeShift uint16 `json:"time_shift"`
	TimeMult  uint32 `json:"time_mult"`
	TimeZero  uint64 `json:"time_zero"`
	TimeValid bool   `json:"time_valid"`
	// Caps are the intel_pt PMU's caps/ files; NominalRatio its
	// max_nonturbo_ratio (ptdump --nom-freq) and TSCARTRatio its
	// tsc_art_ratio ("eax:ebx" of CPUID leaf 0x15, ptdump
	// --cpuid-0x15.eax and .ebx), where sysfs has them.
	Caps         map[string]string `json:"caps"`
	NominalRatio string            `json:"max_nonturbo_ratio,omitempty"`
	TSCARTRatio  string            `json:"tsc_art_ratio,omitempty"`
	// Snapshot is set when the trace is the AUX area's last bytes only.
	Snapshot bool `json:"snapshot"`
	// AUXBytes is the AUX area's size.
	AUXBytes int       `json:"aux_bytes"`
	Started  time.Time `json:"started"`
	Ended    time.Time `json:"ended"`
	// Stop is what ended the capture; Complete is false when it broke
	// off, with Error saying why.
	Stop     string `json:"stop,omitempty"`
	Complete bool   `json:"complete"`
	Error    string `json:"error,omitempty"`
	// TraceBytes and SidebandBytes are the files' sizes; Truncated the
	// AUX records flagged truncated (trace lost), Lost the sideband
	// records lost.
	TraceBytes    int64  `json:"trace_bytes"`
	SidebandBytes int64  `json:"sideband_bytes"`
	Truncated     uint64 `json:"truncated"`
	Lost          uint64 `json:"lost"`
	// CutAtMaxBytes is set when the capture stopped at its byte cap:
	// the last chunk written may end inside a packet.
	CutAtMaxBytes bool `json:"cut_at_max_bytes"`
}

// ReadManifest reads a capture directory's manifest.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w", ManifestFile, err)
	}
	if m.Format != ManifestFormat {
		return m, fmt.Errorf("%s: format %q, want %q", ManifestFile, m.Format, ManifestFormat)
	}
	return m, nil
}

func (s *Source) manifest(req Request, res Result, tc perfevent.TimeConv, runErr error) Manifest {
	m := Manifest{
		Format: ManifestFormat, PMUType: s.pmu.Type,
		Config: fmt.Sprintf("%#x", s.config[perfevent.Config]), Terms: perfevent.FormatTerms(s.terms),
		SampleType: fmt.Sprintf("%#x", perfevent.SidebandSampleType), ExcludeKernel: !req.Kernel,
		PID: req.Target.pid, CPU: req.Target.cpu,
		Vendor: s.cpu.Vendor, Family: s.cpu.Family, Model: s.cpu.Model, Stepping: s.cpu.Stepping,
		TimeShift: tc.Shift, TimeMult: tc.Mult, TimeZero: tc.Zero, TimeValid: tc.Valid,
		Caps: s.pmu.Caps, Snapshot: req.Snapshot, AUXBytes: req.AUXBytes,
		Started: res.Started, Ended: res.Ended, Stop: res.Stop, Complete: runErr == nil,
		TraceBytes: res.TraceBytes, SidebandBytes: res.SidebandBytes, Truncated: res.Truncated, Lost: res.Lost,
		CutAtMaxBytes: res.Stop == stops[1],
	}
	if f, ok := s.pmu.Formats["mtc_period"]; ok {
		for _, t := range s.terms {
			if t.Name == "mtc_period" {
				v := f.Extract(s.config[f.Word])
				m.MTCPeriod = &v
			}
		}
	}
	for name, dst := range map[string]*string{"max_nonturbo_ratio": &m.NominalRatio, "tsc_art_ratio": &m.TSCARTRatio} {
		if v, err := perfevent.ReadFile(s.cfg.sysfs, perfevent.DevicesDir+"/"+PMUName+"/"+name); err == nil {
			*dst = trimNL(v)
		}
	}
	if runErr != nil {
		m.Error = runErr.Error()
	}
	return m
}

func trimNL(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == ' ') {
		s = s[:len(s)-1]
	}
	return s
}

// writer writes a capture's files, within its byte cap.
type writer struct {
	dir      string
	trace    capped
	sideband capped
	budget   int64 // bytes left under the cap, shared by both files
	full     bool
}

type capped struct {
	w *writer
	f *os.File
	n int64
}

func newWriter(dir string, max int64) (*writer, error) {
	w := &writer{dir: dir, budget: max}
	var err error
	if w.trace.f, err = os.OpenFile(filepath.Join(dir, TraceFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
		return nil, err
	}
	if w.sideband.f, err = os.OpenFile(filepath.Join(dir, SidebandFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
		_ = w.trace.f.Close()
		return nil, err
	}
	w.trace.w, w.sideband.w = w, w
	return w, nil
}

// write writes b, or what of it the cap leaves room for; past the cap it
// sets full and writes nothing more.
func (c *capped) write(b []byte) error {
	w := c.w
	if len(b) == 0 || w.full {
		return nil
	}
	if int64(len(b)) > w.budget {
		b = b[:w.budget]
		w.full = true
	}
	n, err := c.f.Write(b)
	c.n += int64(n)
	w.budget -= int64(n)
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(c.f.Name()), err)
	}
	if w.budget == 0 {
		w.full = true
	}
	return nil
}

// finish closes the files and writes the manifest beside them.
func (w *writer) finish(m Manifest) error {
	errs := []error{w.trace.f.Close(), w.sideband.f.Close()}
	b, err := json.MarshalIndent(m, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(w.dir, ManifestFile), append(b, '\n'), 0o600)
	}
	errs = append(errs, err)
	return errors.Join(errs...)
}

// abort removes a capture that did not start.
func (w *writer) abort() {
	_ = w.trace.f.Close()
	_ = w.sideband.f.Close()
	_ = os.RemoveAll(w.dir)
}
