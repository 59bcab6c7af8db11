package perfevent

import (
	"golang.org/x/sys/unix"
)

// SidebandSampleType is the sample_type of a tracing event's sideband
// records (with sample_id_all, every record ends with these fields): the
// task, the time, the CPU, and the event's id, which libipt's perf
// sideband reader and perf's decoder both read.
const SidebandSampleType = unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME | unix.PERF_SAMPLE_CPU | unix.PERF_SAMPLE_IDENTIFIER

// TraceAttr is an AUX-tracing event: intel_pt's, opened disabled, with
// the sideband a decoder needs (mmap, comm, task and context switch
// records) written to its ring.
type TraceAttr struct {
	Type    uint32
	Configs Configs
	PID     int
	CPU     int
	// Kernel traces the kernel too; without it, only user space.
	Kernel bool
	// AuxWatermark is how many AUX bytes make the kernel wake a poller.
	AuxWatermark uint32
}

// Attr is the perf_event_attr OpenTrace opens.
func (a TraceAttr) Attr() unix.PerfEventAttr {
	bits := unix.PerfBitDisabled | unix.PerfBitExcludeHv | unix.PerfBitMmap | unix.PerfBitComm |
		unix.PerfBitTask | unix.PerfBitSampleIDAll | unix.PerfBitCommExec | unix.PerfBitMmap2 | unix.PerfBitContextSwitch
	if !a.Kernel {
		bits |= unix.PerfBitExcludeKernel
	}
	return unix.PerfEventAttr{
		Type:          a.Type,
		Size:          attrSize,
		Config:        a.Configs[Config],
		Ext1:          a.Configs[Config1],
		Ext2:          a.Configs[Config2],
		Sample_type:   SidebandSampleType,
		Bits:          bits,
		Aux_watermark: a.AuxWatermark,
	}
}

// OpenTrace opens a, disabled. An error is an *OpenError.
func OpenTrace(a TraceAttr) (int, error) {
	attr := a.Attr()
	if a.Configs[Config3] != 0 {
		return -1, &OpenError{Attr: Attr{Type: a.Type, Configs: a.Configs, PID: a.PID, CPU: a.CPU}, Errno: unix.EINVAL, Why: "config3 is not supported"}
	}
	fd, err := unix.PerfEventOpen(&attr, a.PID, a.CPU, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return -1, NewOpenError(Attr{Type: a.Type, Configs: a.Configs, PID: a.PID, CPU: a.CPU}, err)
	}
	return fd, nil
}
