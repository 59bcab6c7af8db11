package semconv

import "go.opentelemetry.io/otel/attribute"

// Self-metric attributes of package intelpt: on-demand Intel PT
// captures.
const (
	XpuscopeIntelPTOutcome = attribute.Key("xpuscope.intelpt.outcome")
	XpuscopeIntelPTStop    = attribute.Key("xpuscope.intelpt.stop")
	XpuscopeIntelPTLoss    = attribute.Key("xpuscope.intelpt.loss")
)

// Values of XpuscopeIntelPTOutcome.
const (
	IntelPTDone    = "done"    // the capture ran and its files are complete
	IntelPTRefused = "refused" // the request broke a cap (duration, AUX size, bytes) or every capture slot was taken: nothing was opened
	IntelPTFailed  = "failed"  // the capture could not start or broke off: an error with the reason, nothing left enabled
)

// Values of XpuscopeIntelPTStop: what ended a capture that was done.
const (
	IntelPTStopDuration  = "duration"    // its duration ran out
	IntelPTStopBytes     = "bytes"       // it wrote its cap of bytes
	IntelPTStopCancelled = "cancelled"   // the caller cancelled it
	IntelPTStopExit      = "target_exit" // the traced task exited
)

// Values of XpuscopeIntelPTLoss.
const (
	IntelPTLossTruncated = "truncated" // PERF_RECORD_AUX with PERF_AUX_FLAG_TRUNCATED: trace lost while the AUX area was full
	IntelPTLossRecords   = "records"   // PERF_RECORD_LOST: sideband records the ring had no room for
)

var (
	XpuscopeIntelPTCaptures = Metric{
		Name: "xpuscope.intelpt.captures", Kind: Counter, Unit: "{capture}", Origin: Self,
		Description: "Intel PT captures asked for, by outcome, and for those done by what stopped them.",
		Attributes:  []attribute.Key{XpuscopeIntelPTOutcome, XpuscopeIntelPTStop},
	}
	XpuscopeIntelPTActive = Metric{
		Name: "xpuscope.intelpt.active", Kind: UpDownCounter, Unit: "{capture}", Origin: Self,
		Description: "Intel PT captures running now.",
	}
	XpuscopeIntelPTBytes = Metric{
		Name: "xpuscope.intelpt.bytes", Kind: Counter, Unit: "By", Origin: Self,
		Description: "Bytes of trace and sideband the captures wrote.",
	}
	XpuscopeIntelPTLost = Metric{
		Name: "xpuscope.intelpt.lost", Kind: Counter, Unit: "{record}", Origin: Self,
		Description: "Records that say trace or sideband was lost: AUX records flagged truncated (the AUX area was full), and PERF_RECORD_LOST.",
		Attributes:  []attribute.Key{XpuscopeIntelPTLoss},
	}
)

var intelptMetrics = []Metric{XpuscopeIntelPTCaptures, XpuscopeIntelPTActive, XpuscopeIntelPTBytes, XpuscopeIntelPTLost}

var intelptAttributes = []Attribute{
	{XpuscopeIntelPTOutcome, "string", "What became of an Intel PT capture asked for.", Self, []string{IntelPTDone, IntelPTRefused, IntelPTFailed}},
	{XpuscopeIntelPTStop, "string", "What stopped an Intel PT capture that was done; absent on the others.", Self,
		[]string{IntelPTStopDuration, IntelPTStopBytes, IntelPTStopCancelled, IntelPTStopExit}},
	{XpuscopeIntelPTLoss, "string", "What an Intel PT capture lost.", Self, []string{IntelPTLossTruncated, IntelPTLossRecords}},
}
