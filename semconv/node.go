package semconv

import (
	"slices"

	"go.opentelemetry.io/otel/attribute"
)

// Attributes of package genai/node: the kernel's view of the connections
// and model files of AI workloads (extensions).
const (
	// XpuscopeTCPRole is which end of its connection the socket an event
	// happened on is.
	XpuscopeTCPRole = attribute.Key("xpuscope.tcp.role")
	// XpuscopeTCPResetDirection says whether the socket sent the reset or
	// received it.
	XpuscopeTCPResetDirection = attribute.Key("xpuscope.tcp.reset.direction")
	// XpuscopeModelFileName is the last component of a model file's path,
	// as the process that opened it named it (a Hugging Face cache's
	// snapshot link, not the blob it points to).
	XpuscopeModelFileName = attribute.Key("xpuscope.model.file.name")
	// XpuscopeModelFileID is the model file's identity on the node: its
	// device and inode, "MAJOR:MINOR:INODE".
	XpuscopeModelFileID = attribute.Key("xpuscope.model.file.id")
	// XpuscopeModelFileFormat is the model file's format, by its
	// extension.
	XpuscopeModelFileFormat = attribute.Key("xpuscope.model.file.format")
	// XpuscopeReadaheadKind tells a readahead the reader waited for from
	// one made ahead of it.
	XpuscopeReadaheadKind = attribute.Key("xpuscope.readahead.kind")
	// XpuscopeNodeReason is what a genai/node overflow count is of.
	XpuscopeNodeReason = attribute.Key("xpuscope.node.reason")
	// XpuscopeTCPCallRetransmits is how many segments a call's TCP
	// connection retransmitted during the call (a GenAI span's).
	XpuscopeTCPCallRetransmits = attribute.Key("xpuscope.tcp.call.retransmits")
)

// Values of XpuscopeTCPRole.
const (
	TCPRoleClient  = "client"  // the socket connected
	TCPRoleServer  = "server"  // a listener accepted it
	TCPRoleUnknown = "unknown" // it was open before the Source started
)

// Values of XpuscopeTCPResetDirection.
const (
	ResetSent     = "sent"
	ResetReceived = "received"
)

// Values of XpuscopeModelFileFormat.
const (
	ModelFormatSafetensors = "safetensors" // .safetensors
	ModelFormatGGUF        = "gguf"        // .gguf
	ModelFormatPyTorch     = "pytorch"     // .pt, .pth
	ModelFormatBin         = "bin"         // .bin (PyTorch's pytorch_model.bin, OpenVINO's weights)
	ModelFormatCheckpoint  = "checkpoint"  // .ckpt
	ModelFormatONNX        = "onnx"        // .onnx
	ModelFormatTensorRT    = "tensorrt"    // .engine, .plan, .trt
)

// ModelFormats lists the values of XpuscopeModelFileFormat.
var ModelFormats = []string{ModelFormatSafetensors, ModelFormatGGUF, ModelFormatPyTorch, ModelFormatBin,
	ModelFormatCheckpoint, ModelFormatONNX, ModelFormatTensorRT}

// Values of XpuscopeReadaheadKind.
const (
	ReadaheadSync  = "sync"  // a read or fault found the page missing and waited for it
	ReadaheadAsync = "async" // read ahead of the reader, at a marked page
)

// Values of XpuscopeNodeReason.
const (
	NodeReasonEndpoints     = "endpoints"      // a server endpoint past the cap: counted under server.address=_OTHER
	NodeReasonProcesses     = "processes"      // a process past the cap: its series carry no pod or process attributes
	NodeReasonFiles         = "files"          // a model file opened with the kernel's table of watched files full: not counted
	NodeReasonFileProcesses = "file_processes" // a process's use of a model file with the kernel's table full: not counted per process
	NodeReasonLongPath      = "long_path"      // an open of a path of 512 bytes or more: not looked at
	NodeReasonMappings      = "mappings"       // a mapping of a model file past a process's 16 (or past 4,096 processes): its page faults not counted
)

// tcpAttrs are carried by the TCP series: the server end where it is an
// LLM provider's or a model server's, the socket's end, and the pod of its
// owner.
var tcpAttrs = slices.Concat([]attribute.Key{ServerAddress, ServerPort, XpuscopeTCPRole}, processAttrs)

// modelFileAttrs identify a model file's series.
var modelFileAttrs = []attribute.Key{XpuscopeModelFileName, XpuscopeModelFileID, XpuscopeModelFileFormat}

// modelProcAttrs identify a process's series of a model file.
var modelProcAttrs = slices.Concat(modelFileAttrs, []attribute.Key{ProcessPID, ProcessExecutableName}, processAttrs)

const nodeScope = "Reported by genai/node. "

var (
	XpuscopeTCPRetransmits = Metric{
		Name: "xpuscope.tcp.retransmits", Kind: Counter, Unit: "{retransmit}", Origin: Extension,
		Description: "TCP retransmissions that left the node, by the server end of the connection where it is an LLM provider's or a model server's, by which end the socket is, and by the pod of the socket's owner.",
		Attributes:  tcpAttrs,
		Note: nodeScope + "From the BTF tracepoint tcp_retransmit_skb, attributed by the socket it names, never by the task the CPU ran (retransmits run in timers and softirqs). One per retransmitted buffer: under TSO one may carry several segments, which /proc/net/snmp's RetransSegs counts one by one. " +
			"server.address and server.port are set for the connections an LLM call of the genai capture was seen on (server.address is then the name the call gave), and for those to or from a model server's port (genai.DefaultPlaintextPorts unless configured; server.address is then the address). The pod is the one of the process that connected or listened, as seen after the Source started; sockets older than the Source carry no pod.",
	}
	XpuscopeTCPRetransmitFailures = Metric{
		Name: "xpuscope.tcp.retransmit.failures", Kind: Counter, Unit: "{retransmit}", Origin: Extension,
		Description: "TCP retransmissions the kernel tried and could not send, by error, with the attributes of xpuscope.tcp.retransmits.",
		Attributes:  with(tcpAttrs, ErrorType),
		Note:        nodeScope + "From tcp_retransmit_skb's err argument (Linux 6.14+; none before). error.type is the errno's name (ENOBUFS, EBUSY, …).",
	}
	XpuscopeTCPResets = Metric{
		Name: "xpuscope.tcp.resets", Kind: Counter, Unit: "{reset}", Origin: Extension,
		Description: "TCP resets sent and received on the node, with the attributes of xpuscope.tcp.retransmits and the direction.",
		Attributes:  with(tcpAttrs, XpuscopeTCPResetDirection),
		Note:        nodeScope + "From the BTF tracepoints tcp_send_reset and tcp_receive_reset. A reset sent in answer to a segment no socket took (a closed port) has no socket, so no attributes but the direction.",
	}
	XpuscopeModelFileRead = Metric{
		Name: "xpuscope.model.file.read", Kind: Counter, Unit: "By", Origin: Extension,
		Description: "Bytes processes read from model files with read, pread64, readv, preadv and preadv2, by file and process.",
		Attributes:  modelProcAttrs,
		Note:        nodeScope + "Model weights are mostly mapped, not read: see xpuscope.model.file.faults. Reads through io_uring are not seen.",
	}
	XpuscopeModelFileFaults = Metric{
		Name: "xpuscope.model.file.faults", Kind: Counter, Unit: "{fault}", Origin: Extension,
		Description: "Page faults served from model files' mappings, by file and process.",
		Attributes:  modelProcAttrs,
		Note:        nodeScope + "One per fault: fault-around's mm_filemap_map_pages, or mm_filemap_fault where fault-around did not map the page (Linux 6.10+; absent before). The same count as the process's minor and major faults on those mappings.",
	}
	XpuscopeModelFileReadahead = Metric{
		Name: "xpuscope.model.file.readahead", Kind: Counter, Unit: "{readahead}", Origin: Extension,
		Description: "Readaheads of model files, synchronous (the reader or fault waited) or asynchronous, by file.",
		Attributes:  with(modelFileAttrs, XpuscopeReadaheadKind),
		Note:        nodeScope + "From the BTF tracepoints page_cache_sync_ra and page_cache_async_ra (Linux 6.12+; absent before).",
	}
	XpuscopeModelFilePageCacheAdded = Metric{
		Name: "xpuscope.model.file.page_cache.added", Kind: Counter, Unit: "{page}", Origin: Extension,
		Description: "Pages of model files added to the page cache, by file: read from storage (or written).",
		Attributes:  modelFileAttrs,
		Note:        nodeScope + "From mm_filemap_add_to_page_cache, counted in the kernel for the watched files only: for any other file the program looks the inode up and returns.",
	}
	XpuscopeModelFilePageCacheEvicted = Metric{
		Name: "xpuscope.model.file.page_cache.evicted", Kind: Counter, Unit: "{page}", Origin: Extension,
		Description: "Pages of model files removed from the page cache, by file: reclaimed under memory pressure, dropped by posix_fadvise or truncated.",
		Attributes:  modelFileAttrs,
		Note:        nodeScope + "From mm_filemap_delete_from_page_cache, counted as page_cache.added is.",
	}
	XpuscopeModelFileSize = Metric{
		Name: "xpuscope.model.file.size", Kind: UpDownCounter, Unit: "By", Origin: Extension,
		Description: "Size of each model file watched.",
		Attributes:  modelFileAttrs,
		Note:        nodeScope + "As it was when the file was found.",
	}
	XpuscopeModelFileLoadDuration = Metric{
		Name: "xpuscope.model.file.load.duration", Kind: Histogram, Unit: "s", Origin: Extension,
		Description: "Time a process took to load a model file: from its open to the end of its first burst of reads and faults; and each later burst of reads and faults (a reload), from its first to its last.",
		Attributes:  []attribute.Key{XpuscopeModelFileName, XpuscopeModelFileFormat, ProcessExecutableName},
		Buckets:     []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
		Note:        nodeScope + "A burst ends when the process has read and faulted nothing of the file for 2 s. A file found open by a process that predates the Source is timed from its first read or fault seen.",
	}
	XpuscopeModelFileReloads = Metric{
		Name: "xpuscope.model.file.reloads", Kind: Counter, Unit: "{reload}", Origin: Extension,
		Description: "Reloads of model files: a quarter of a loaded file's pages or more evicted from the page cache, then a quarter or more added back.",
		Attributes:  modelFileAttrs,
		Note:        nodeScope + "Each is also a span (" + SpanModelFileReload.Name + ") on the process that read the file back, and a log record where the Source has a logger.",
	}
	XpuscopeNodeRecordsDropped = Metric{
		Name: "xpuscope.node.records.dropped", Kind: Counter, Unit: "{record}", Origin: Self,
		Description: "TCP events and model-file opens the kernel side of genai/node had no room to tell user space of in its ring buffer.",
	}
	XpuscopeNodeOverflow = Metric{
		Name: "xpuscope.node.overflow", Kind: Counter, Unit: "{item}", Origin: Self,
		Description: "What genai/node folded or left out to stay within its caps, by reason.",
		Attributes:  []attribute.Key{XpuscopeNodeReason},
	}
	XpuscopeNodeWatchedFiles = Metric{
		Name: "xpuscope.node.watched_files", Kind: UpDownCounter, Unit: "{file}", Origin: Self,
		Description: "Model files whose page cache, faults and reads the kernel side of genai/node counts.",
	}
)

// SpanModelFileReload documents the span of a model file's reload.
var SpanModelFileReload = Span{
	Name: "model.file.reload",
	Description: "A model file read back into the page cache after a quarter or more of it was evicted (kind INTERNAL), on the process that read it back, a child of its TRACEPARENT where it has one: from the eviction to the last page added back when the reload was seen. " +
		"Its event model.file.evicted marks when the eviction was seen, with the pages evicted.",
	Attributes: slices.Concat(modelProcAttrs, []attribute.Key{XpuscopeModelFilePagesEvicted, XpuscopeModelFilePagesAdded}),
}

// Attributes of the reload span and its event.
const (
	XpuscopeModelFilePagesEvicted = attribute.Key("xpuscope.model.file.pages.evicted")
	XpuscopeModelFilePagesAdded   = attribute.Key("xpuscope.model.file.pages.added")
)

var nodeMetrics = []Metric{
	XpuscopeTCPRetransmits, XpuscopeTCPRetransmitFailures, XpuscopeTCPResets,
	XpuscopeModelFileRead, XpuscopeModelFileFaults, XpuscopeModelFileReadahead,
	XpuscopeModelFilePageCacheAdded, XpuscopeModelFilePageCacheEvicted, XpuscopeModelFileSize,
	XpuscopeModelFileLoadDuration, XpuscopeModelFileReloads,
	XpuscopeNodeRecordsDropped, XpuscopeNodeOverflow, XpuscopeNodeWatchedFiles,
}

var nodeAttributes = []Attribute{
	{XpuscopeTCPRole, "string", "Which end of its connection a socket is: the one that connected, or one a listener accepted; unknown for a socket open before the Source started.", Extension, []string{TCPRoleClient, TCPRoleServer, TCPRoleUnknown}},
	{XpuscopeTCPResetDirection, "string", "Whether the socket sent the reset or received it.", Extension, []string{ResetSent, ResetReceived}},
	{XpuscopeModelFileName, "string", "Last component of a model file's path as the process opened it (at most 64 bytes, its end); " + Other + " past the cap of files.", Extension, nil},
	{XpuscopeModelFileID, "string", "A model file's device and inode, MAJOR:MINOR:INODE, as stat(2) gives them.", Extension, nil},
	{XpuscopeModelFileFormat, "string", "A model file's format, by its extension: .safetensors, .gguf, .pt and .pth (pytorch), .bin, .ckpt (checkpoint), .onnx, .engine, .plan and .trt (tensorrt).", Extension, ModelFormats},
	{XpuscopeReadaheadKind, "string", "Whether the reader waited for the readahead (sync) or it was made ahead of it (async).", Extension, []string{ReadaheadSync, ReadaheadAsync}},
	{XpuscopeNodeReason, "string", "What a genai/node overflow count is of.", Self, []string{NodeReasonEndpoints, NodeReasonProcesses, NodeReasonFiles, NodeReasonFileProcesses, NodeReasonLongPath, NodeReasonMappings}},
	{XpuscopeTCPCallRetransmits, "int", "Segments the call's TCP connection retransmitted between the call's start and end, as genai/node counts them by socket (at most the socket's last 16); set only where there were any. Span attribute only: the genai capture's GenAI spans of calls over plaintext TCP, Go's crypto/tls, and OpenSSL where the capture's plaintext programs run.", Extension, nil},
	{XpuscopeModelFilePagesEvicted, "int", "Pages of the file evicted from the page cache before a reload. Span attribute only.", Extension, nil},
	{XpuscopeModelFilePagesAdded, "int", "Pages of the file added back to the page cache by the reload, when it was seen. Span attribute only.", Extension, nil},
}
