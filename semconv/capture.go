package semconv

import "go.opentelemetry.io/otel/attribute"

// Self-metrics of the genai capture Source.
const (
	XpuscopeGenAIOutcome = attribute.Key("xpuscope.genai.capture.outcome")
	XpuscopeGenAIReason  = attribute.Key("xpuscope.genai.capture.reason")
)

// Values of XpuscopeGenAIOutcome.
const (
	CaptureOutcomeEmitted    = "emitted"     // an LLM API call: span and metrics
	CaptureOutcomeNotLLM     = "not_llm"     // HTTP, but no LLM API the parsers know
	CaptureOutcomeServerSide = "server_side" // seen from the server's end: reported as a served request (a SERVER span and gen_ai.server.*) when it is an LLM API call
	CaptureOutcomeParseError = "parse_error" // an LLM API whose body could not be read
	CaptureOutcomeGRPC       = "grpc"        // a gRPC call (Gemini's gRPC API among others): counted, not parsed
)

// Values of XpuscopeGenAIReason.
const (
	CaptureReasonGap       = "gap"       // bytes lost: a full ring buffer, or a call larger than the capture takes
	CaptureReasonClose     = "close"     // the connection closed mid-exchange
	CaptureReasonMalformed = "malformed" // not valid HTTP/1.x or HTTP/2 framing, or an HTTP/2 header block that did not decode
	CaptureReasonOverflow  = "overflow"  // too many pipelined requests waiting, or HTTP/2 streams in progress
	CaptureReasonRefused   = "refused"   // an HTTP/2 stream the server did not process (REFUSED_STREAM, GOAWAY): its client retries it
	CaptureReasonIdle      = "idle"      // the connection was evicted, idle or over the connection cap
)

var (
	XpuscopeGenAICaptureExchanges = Metric{
		Name: "xpuscope.genai.capture.exchanges", Kind: Counter, Unit: "{exchange}", Origin: Self,
		Description: "HTTP/1.x exchanges and HTTP/2 streams the capture framed, by what became of them.",
		Attributes:  []attribute.Key{XpuscopeGenAIOutcome},
	}
	XpuscopeGenAICaptureAbandoned = Metric{
		Name: "xpuscope.genai.capture.abandoned", Kind: Counter, Unit: "{exchange}", Origin: Self,
		Description: "Exchanges the capture gave up on before they were complete, by why.",
		Attributes:  []attribute.Key{XpuscopeGenAIReason},
	}
	XpuscopeGenAICaptureDropped = Metric{
		Name: "xpuscope.genai.capture.records.dropped", Kind: Counter, Unit: "{record}", Origin: Self,
		Description: "Capture records the ring buffer had no room for (counted in BPF); the exchanges they belonged to are abandoned, never mis-assembled.",
	}
	XpuscopeGenAICaptureConnections = Metric{
		Name: "xpuscope.genai.capture.connections", Kind: UpDownCounter, Unit: "{connection}", Origin: Self,
		Description: "HTTP connections the capture is reassembling now.",
	}
	XpuscopeGenAICaptureSkippedConnections = Metric{
		Name: "xpuscope.genai.capture.connections.skipped", Kind: Counter, Unit: "{connection}", Origin: Self,
		Description: "Connections the capture stopped reading: not HTTP, switched to another protocol, or TLS it could not decrypt.",
		Attributes:  []attribute.Key{XpuscopeGenAIReason},
	}
	XpuscopeGenAICaptureGoProcesses = Metric{
		Name: "xpuscope.genai.capture.go_processes", Kind: UpDownCounter, Unit: "{process}", Origin: Self,
		Description: "Go programs running now; their crypto/tls is probed where the executable links it (attached_files counts those probed).",
	}
	XpuscopeGenAICaptureAttachedFiles = Metric{
		Name: "xpuscope.genai.capture.attached_files", Kind: UpDownCounter, Unit: "{file}", Origin: Self,
		Description: "Files (by device and inode) the TLS probes are attached to: OpenSSL libraries and executables, and Go executables.",
	}
)

var captureMetrics = []Metric{
	XpuscopeGenAICaptureExchanges, XpuscopeGenAICaptureAbandoned, XpuscopeGenAICaptureDropped,
	XpuscopeGenAICaptureConnections, XpuscopeGenAICaptureSkippedConnections, XpuscopeGenAICaptureGoProcesses,
	XpuscopeGenAICaptureAttachedFiles,
}

var captureAttributes = []Attribute{
	{XpuscopeGenAIOutcome, "string", "What became of an exchange the genai capture framed.", Self,
		[]string{CaptureOutcomeEmitted, CaptureOutcomeNotLLM, CaptureOutcomeServerSide, CaptureOutcomeParseError, CaptureOutcomeGRPC}},
	{XpuscopeGenAIReason, "string", "Why the genai capture gave up on an exchange, or stopped reading a connection (not_http, switched, undecryptable, not_socket).", Self,
		[]string{CaptureReasonGap, CaptureReasonClose, CaptureReasonMalformed, CaptureReasonOverflow, CaptureReasonRefused,
			CaptureReasonIdle, CaptureSkipNotHTTP, CaptureSkipSwitched, CaptureSkipUndecryptable, CaptureSkipNotSocket}},
}

// Values of XpuscopeGenAIReason on XpuscopeGenAICaptureSkippedConnections.
const (
	CaptureSkipNotHTTP  = "not_http"
	CaptureSkipSwitched = "switched"
	// A TLS connection read at its socket whose records could not be
	// decrypted: its secrets never came (an OpenSSL connection of TLS
	// 1.2, or of a build whose secrets were not found), its cipher suite
	// is not one the capture decrypts, or bytes of it were lost.
	CaptureSkipUndecryptable = "undecryptable"
	// A TLS connection, in a program whose connections are read at their
	// sockets, over no TCP socket the capture reads (a Go one over a
	// wrapper of its socket, QUIC; an OpenSSL one whose first bytes were
	// not seen as its handshake's): not read.
	CaptureSkipNotSocket = "not_socket"
)
