package semconv

import "go.opentelemetry.io/otel/attribute"

// servingScope is the instrumentation scope of package genai/serving, the
// one that reports histograms with a model server's own bucket bounds
// (Metric.BucketsKeptBy).
const servingScope = "github.com/xpuscope/xpuscope/genai/serving"

// Custom values of GenAIProviderName for the model servers package
// genai/serving reads: the server's kind. Not OpenTelemetry-defined.
const (
	GenAIProviderVLLM              = "vllm"
	GenAIProviderTGI               = "tgi"
	GenAIProviderTriton            = "triton"
	GenAIProviderTorchServe        = "torchserve"
	GenAIProviderTensorFlowServing = "tensorflow_serving"
	GenAIProviderONNXRuntime       = "onnxruntime"
)

// GenAIServingProviders lists the kinds of model server genai/serving
// recognises, as gen_ai.provider.name values.
var GenAIServingProviders = []string{
	GenAIProviderVLLM, GenAIProviderTGI, GenAIProviderTriton,
	GenAIProviderTorchServe, GenAIProviderTensorFlowServing, GenAIProviderONNXRuntime,
}

// Attributes of the model-server series (extensions).
const (
	// XpuscopeGenAIServerRole is what a process does in its model server.
	XpuscopeGenAIServerRole = attribute.Key("xpuscope.genai.server.role")
	// XpuscopeGenAIServerFinishReason is why a successful request ended,
	// as the server says it (vLLM: stop, length).
	XpuscopeGenAIServerFinishReason = attribute.Key("xpuscope.genai.server.finish_reason")
	// XpuscopeGenAIServerPhase is the part of a request's handling a
	// cumulative time counts.
	XpuscopeGenAIServerPhase = attribute.Key("xpuscope.genai.server.phase")
)

// Values of XpuscopeGenAIServerRole.
const (
	ServerRoleAPIServer  = "api_server"  // vLLM's API server (vllm serve, the OpenAI entry point): holds the port
	ServerRoleEngineCore = "engine_core" // vLLM's engine core (VLLM::EngineCore): holds the GPU
	ServerRoleWorker     = "worker"      // vLLM's GPU workers (VLLM::Worker), TorchServe's backend workers
	ServerRoleLauncher   = "launcher"    // text-generation-launcher
	ServerRoleRouter     = "router"      // text-generation-router: holds the port
	ServerRoleShard      = "shard"       // TGI's Python model shards (text-generation-server serve): hold the GPU
	ServerRoleServer     = "server"      // a server of one process: tritonserver, tensorflow_model_server, TorchServe's frontend
	ServerRoleProcess    = "process"     // a process that maps ONNX Runtime
)

// Values of XpuscopeGenAIServerPhase.
const (
	ServerPhaseRequest       = "request"        // the whole request (Triton nv_inference_request_duration_us, TorchServe ts_inference_latency_microseconds)
	ServerPhaseQueue         = "queue"          // waiting to be scheduled
	ServerPhaseComputeInput  = "compute_input"  // Triton: preparing the inputs in the backend
	ServerPhaseComputeInfer  = "compute_infer"  // Triton: running the model
	ServerPhaseComputeOutput = "compute_output" // Triton: preparing the outputs
)

// Self-metric attributes of genai/serving.
const (
	XpuscopeGenAIServingState  = attribute.Key("xpuscope.genai.serving.state")
	XpuscopeGenAIServingReason = attribute.Key("xpuscope.genai.serving.reason")
)

// Values of XpuscopeGenAIServingState.
const (
	ServingStateReading    = "reading"     // its last scrape was read
	ServingStateFailing    = "failing"     // it has an endpoint, whose last scrape failed (backing off)
	ServingStateNoEndpoint = "no_endpoint" // no endpoint found, or none to find (ONNX Runtime, TF Serving without --monitoring_config_file)
)

// Values of XpuscopeGenAIServingReason.
const (
	ServingReasonServers   = "servers"   // a server past the cap of servers: found, not read
	ServingReasonModels    = "models"    // a model's series folded into gen_ai.request.model=_OTHER
	ServingReasonSeries    = "series"    // a series past a server's cap of series: dropped
	ServingReasonProcesses = "processes" // a process of a server past its cap: not listed
	ServingReasonInvalid   = "invalid"   // a series the mapping refused: buckets that decrease, a value not finite, bounds unlike those it is folded with
)

// Values of ErrorType on xpuscope.genai.serving.scrapes.
const (
	ScrapeErrorTimeout      = "timeout"        // no whole answer within the scrape timeout
	ScrapeErrorConnect      = "connect"        // the connection was refused or reset
	ScrapeErrorNetNS        = "netns"          // the server's network namespace could not be entered
	ScrapeErrorStatus       = "http_status"    // an answer that is not 200
	ScrapeErrorTooLarge     = "body_too_large" // an answer past the body cap
	ScrapeErrorParse        = "parse"          // an answer that is not Prometheus text or OpenMetrics
	ScrapeErrorUnrecognised = "unrecognised"   // exposition without a metric of the server's kind
)

// servingAttrs are carried by every model-server series: the server's
// kind, its model (both request and response model: the name the server
// serves it under), its port, and the pod of the process holding the port.
var servingAttrs = []attribute.Key{
	GenAIProviderName, GenAIRequestModel, GenAIResponseModel, ServerPort,
	K8sNamespaceName, K8sPodName, K8sPodUID, K8sContainerName, ContainerID,
}

const servingNote = "From the model server's own metrics endpoint, found and read by package genai/serving."

// Model-server metrics (extensions): what the OpenTelemetry conventions
// lack, read from the servers' endpoints.
var (
	XpuscopeGenAIServerWaitingRequests = Metric{
		Name: "xpuscope.genai.server.waiting_requests", Kind: UpDownCounter, Unit: "{request}", Origin: Extension,
		Description: "Requests the model server has taken and not yet scheduled: its queue.",
		Attributes:  servingAttrs,
		Note:        servingNote + " vLLM vllm:num_requests_waiting (summed over its engines), TGI tgi_queue_size, Triton nv_inference_pending_request_count. The capture's xpuscope.genai.client.waiting_requests is the clients' view of the same queue.",
	}
	XpuscopeGenAIServerRunningRequests = Metric{
		Name: "xpuscope.genai.server.running_requests", Kind: UpDownCounter, Unit: "{request}", Origin: Extension,
		Description: "Requests in the model server's running batch.",
		Attributes:  servingAttrs,
		Note:        servingNote + " vLLM vllm:num_requests_running (summed over its engines), TGI tgi_batch_current_size.",
	}
	XpuscopeGenAIServerKVCacheUtilization = Metric{
		Name: "xpuscope.genai.server.kv_cache.utilization", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "Fraction of the model server's KV-cache blocks in use.",
		Attributes:  servingAttrs,
		Note:        servingNote + " vLLM vllm:kv_cache_usage_perc, and vllm:gpu_cache_usage_perc of the releases before the 0.9 rename (the new name wins where a release exports both); the highest of its engines'.",
	}
	XpuscopeGenAIServerKVCacheCapacity = Metric{
		Name: "xpuscope.genai.server.kv_cache.capacity", Kind: UpDownCounter, Unit: "{token}", Origin: Extension,
		Description: "Tokens the model server's KV cache holds when full: its blocks times the tokens of a block.",
		Attributes:  servingAttrs,
		Note:        servingNote + " vLLM: num_gpu_blocks times block_size of vllm:cache_config_info, summed over its engines. No server exports the bytes of a block (they depend on the model's layers, heads and cache type), so the cache is not reported in bytes; usage in tokens is this times kv_cache.utilization.",
	}
	XpuscopeGenAIServerTokens = Metric{
		Name: "xpuscope.genai.server.tokens", Kind: Counter, Unit: "{token}", Origin: Extension,
		Description: "Prompt (input) and generated (output) tokens the model server processed.",
		Attributes:  with(servingAttrs, GenAITokenType),
		Note:        servingNote + " vLLM vllm:prompt_tokens_total and vllm:generation_tokens_total; TGI the sums of tgi_request_input_length and tgi_request_generated_tokens.",
	}
	XpuscopeGenAIServerPreemptions = Metric{
		Name: "xpuscope.genai.server.preemptions", Kind: Counter, Unit: "{preemption}", Origin: Extension,
		Description: "Requests the model server preempted (put back in its queue to free KV cache for others).",
		Attributes:  servingAttrs,
		Note:        servingNote + " vLLM vllm:num_preemptions_total.",
	}
	XpuscopeGenAIServerRequests = Metric{
		Name: "xpuscope.genai.server.requests", Kind: Counter, Unit: "{request}", Origin: Extension,
		Description: "Requests the model server finished, by outcome: error.type is set on failed ones.",
		Attributes:  with(servingAttrs, ErrorType, XpuscopeGenAIServerFinishReason),
		Note:        servingNote + " vLLM vllm:request_success_total by finished_reason (abort and error as error.type, stop and length as the finish reason); TGI tgi_request_success and tgi_request_failure by err; Triton nv_inference_request_success and nv_inference_request_failure by reason; TF Serving :tensorflow:serving:request_count by status (OK is success); TorchServe ts_inference_requests_total, every request without an outcome. error.type is capped (64 values per server).",
	}
	XpuscopeGenAIServerRequestTime = Metric{
		Name: "xpuscope.genai.server.request.time", Kind: Counter, Unit: "s", Origin: Extension,
		Description: "Cumulative time requests spent in the model server, by phase: divided by the requests over the same window, the mean time a request spent in it.",
		Attributes:  with(servingAttrs, XpuscopeGenAIServerPhase),
		Note:        servingNote + " Triton's cumulative microsecond counters (nv_inference_request_duration_us, queue, compute_input, compute_infer, compute_output) and TorchServe's (ts_inference_latency_microseconds as request, ts_queue_latency_microseconds as queue), in seconds. Exported as counters, as the servers keep them: averages are derivable, percentiles are not.",
	}
	XpuscopeGenAIServerInferences = Metric{
		Name: "xpuscope.genai.server.inferences", Kind: Counter, Unit: "{inference}", Origin: Extension,
		Description: "Inferences the model server performed: a request of a batch of n counts n.",
		Attributes:  servingAttrs,
		Note:        servingNote + " Triton nv_inference_count. Divided by xpuscope.genai.server.executions, the mean batch size.",
	}
	XpuscopeGenAIServerExecutions = Metric{
		Name: "xpuscope.genai.server.executions", Kind: Counter, Unit: "{execution}", Origin: Extension,
		Description: "Batches the model server executed.",
		Attributes:  servingAttrs,
		Note:        servingNote + " Triton nv_inference_exec_count.",
	}
	XpuscopeGenAIServerQueueDuration = Metric{
		Name: "xpuscope.genai.server.queue.duration", Kind: Histogram, Unit: "s", Origin: Extension,
		Description:   "Time a request waited in the model server's queue before it was first scheduled.",
		Attributes:    servingAttrs,
		BucketsKeptBy: servingScope,
		Note:          servingNote + " vLLM vllm:request_queue_time_seconds, TGI tgi_request_queue_duration, with the server's own bucket bounds.",
	}
	XpuscopeGenAIServerProcesses = Metric{
		Name: "xpuscope.genai.server.processes", Kind: UpDownCounter, Unit: "{process}", Origin: Extension,
		Description: "The processes of each model server found on the node, one series each, by role: what joins a server to its processes' GPU series (process.pid).",
		Attributes: []attribute.Key{
			GenAIProviderName, ServerPort, ProcessPID, ProcessExecutableName, XpuscopeGenAIServerRole,
			K8sNamespaceName, K8sPodName, K8sPodUID, K8sContainerName, ContainerID,
		},
		Note: servingNote + " Every server found has its processes here, an endpoint or not (an ONNX Runtime process, a TF Serving without monitoring): process.gpu.memory.usage{process.pid} of package gpu joins them to the GPUs they hold. At most 64 processes a server.",
	}
)

// Self-metrics of genai/serving.
var (
	XpuscopeGenAIServingScrapes = Metric{
		Name: "xpuscope.genai.serving.scrapes", Kind: Counter, Unit: "{scrape}", Origin: Self,
		Description: "Scrapes of model servers' metrics endpoints; error.type is set on the failed ones, by why.",
		Attributes:  []attribute.Key{GenAIProviderName, ErrorType},
		Note:        "A failing server is scraped again after a backoff that doubles, from the interval to 16 times it; three failures in a row make the Source look for its endpoint again.",
	}
	XpuscopeGenAIServingServers = Metric{
		Name: "xpuscope.genai.serving.servers", Kind: UpDownCounter, Unit: "{server}", Origin: Self,
		Description: "Model servers found on the node, by kind and by whether they are read.",
		Attributes:  []attribute.Key{GenAIProviderName, XpuscopeGenAIServingState},
	}
	XpuscopeGenAIServingOverflow = Metric{
		Name: "xpuscope.genai.serving.overflow", Kind: Counter, Unit: "{item}", Origin: Self,
		Description: "Servers, models, series and processes past a cap of the Source, and series the mapping refused, by reason; counted at each scrape that meets them.",
		Attributes:  []attribute.Key{XpuscopeGenAIServingReason},
	}
)

var servingMetrics = []Metric{
	XpuscopeGenAIServerWaitingRequests, XpuscopeGenAIServerRunningRequests,
	XpuscopeGenAIServerKVCacheUtilization, XpuscopeGenAIServerKVCacheCapacity,
	XpuscopeGenAIServerTokens, XpuscopeGenAIServerPreemptions, XpuscopeGenAIServerRequests,
	XpuscopeGenAIServerRequestTime, XpuscopeGenAIServerInferences, XpuscopeGenAIServerExecutions,
	XpuscopeGenAIServerQueueDuration, XpuscopeGenAIServerProcesses,
	XpuscopeGenAIServingScrapes, XpuscopeGenAIServingServers, XpuscopeGenAIServingOverflow,
}

var servingAttributes = []Attribute{
	{XpuscopeGenAIServerRole, "string", "What the process does in its model server.", Extension,
		[]string{ServerRoleAPIServer, ServerRoleEngineCore, ServerRoleWorker, ServerRoleLauncher, ServerRoleRouter, ServerRoleShard, ServerRoleServer, ServerRoleProcess}},
	{XpuscopeGenAIServerFinishReason, "string", "Why a successful request ended, as the model server says it (vLLM's finished_reason: stop, length); absent where the server does not say.", Extension, nil},
	{XpuscopeGenAIServerPhase, "string", "The part of a request's handling a cumulative time counts.", Extension,
		[]string{ServerPhaseRequest, ServerPhaseQueue, ServerPhaseComputeInput, ServerPhaseComputeInfer, ServerPhaseComputeOutput}},
	{XpuscopeGenAIServingState, "string", "Whether a model server found is read.", Self,
		[]string{ServingStateReading, ServingStateFailing, ServingStateNoEndpoint}},
	{XpuscopeGenAIServingReason, "string", "Which cap an item went past, or that the mapping refused it.", Self,
		[]string{ServingReasonServers, ServingReasonModels, ServingReasonSeries, ServingReasonProcesses, ServingReasonInvalid}},
}
