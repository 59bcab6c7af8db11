package semconv

import "go.opentelemetry.io/otel/attribute"

// GenAI names follow the OpenTelemetry GenAI semantic conventions v1.41.0
// (https://opentelemetry.io/schemas/1.41.0; the Go constants of
// go.opentelemetry.io/otel/semconv/v1.41.0 were checked against these).
// The conventions are in Development status: names may still change
// upstream. Cost is not an OpenTelemetry concept: it lives under our own
// xpuscope.genai.* namespace, never under gen_ai.*, which belongs to
// OpenTelemetry.

// GenAISchemaVersion is the semantic-conventions version the GenAI names
// follow.
const GenAISchemaVersion = "1.41.0"

// Values of error.type for a call its connection's end cut short:
// stream_truncated when the response had begun and the server ended it
// (or, over TLS, whichever end did: the capture cannot tell), cancelled
// when the client ended it (plaintext only).
const (
	GenAIErrorStreamTruncated = "stream_truncated"
	GenAIErrorCancelled       = "cancelled"
)

// GenAI attributes (OpenTelemetry).
const (
	GenAIProviderName          = attribute.Key("gen_ai.provider.name")
	GenAIOperationName         = attribute.Key("gen_ai.operation.name")
	GenAIRequestModel          = attribute.Key("gen_ai.request.model")
	GenAIRequestTemperature    = attribute.Key("gen_ai.request.temperature")
	GenAIRequestTopP           = attribute.Key("gen_ai.request.top_p")
	GenAIRequestMaxTokens      = attribute.Key("gen_ai.request.max_tokens")
	GenAIRequestChoiceCount    = attribute.Key("gen_ai.request.choice.count")
	GenAIRequestStream         = attribute.Key("gen_ai.request.stream")
	GenAIResponseModel         = attribute.Key("gen_ai.response.model")
	GenAIResponseID            = attribute.Key("gen_ai.response.id")
	GenAIResponseFinishReasons = attribute.Key("gen_ai.response.finish_reasons")
	// GenAIResponseTimeToFirstChunk is the span-attribute form of
	// GenAIClientOperationTimeToFirstChunk, in seconds.
	GenAIResponseTimeToFirstChunk = attribute.Key("gen_ai.response.time_to_first_chunk")
	GenAIUsageInputTokens         = attribute.Key("gen_ai.usage.input_tokens")
	GenAIUsageOutputTokens        = attribute.Key("gen_ai.usage.output_tokens")
	// Cache and reasoning usage are OpenTelemetry names since v1.41 (no
	// extension needed). Each is a part of the input or output total, not
	// an addition to it.
	GenAIUsageCacheReadInputTokens     = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	GenAIUsageCacheCreationInputTokens = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	GenAIUsageReasoningOutputTokens    = attribute.Key("gen_ai.usage.reasoning.output_tokens")
	GenAITokenType                     = attribute.Key("gen_ai.token.type")
	// Content attributes: the prompt and completion text as JSON
	// strings, on spans only and only when content capture is on.
	GenAISystemInstructions = attribute.Key("gen_ai.system_instructions")
	GenAIInputMessages      = attribute.Key("gen_ai.input.messages")
	GenAIOutputMessages     = attribute.Key("gen_ai.output.messages")
	// OpenAIAPIType tells the OpenAI Chat Completions API from the
	// Responses API, which share gen_ai.operation.name=chat.
	OpenAIAPIType = attribute.Key("openai.api.type")
)

// Server attributes (OpenTelemetry, stable): the GenAI endpoint as the
// request addressed it.
const (
	ServerAddress = attribute.Key("server.address")
	ServerPort    = attribute.Key("server.port")
)

// GenAI attributes (extensions).
const (
	// XpuscopeGenAICostUSD is the estimated cost of one call, in US
	// dollars, from user-given rates. Span attribute only; absent when no
	// rate is known for the call's provider and model.
	XpuscopeGenAICostUSD = attribute.Key("xpuscope.genai.cost.usd")
	// XpuscopeGenAIContentTruncated names the content attributes of a
	// span that are not whole: cut to the capture's size cap, or read
	// from a body the HTTP capture cut short.
	XpuscopeGenAIContentTruncated = attribute.Key("xpuscope.genai.content.truncated")
)

// Well-known values of GenAIProviderName (v1.41). When one applies it MUST
// be used; a custom value MAY be used otherwise.
const (
	GenAIProviderOpenAI           = "openai"
	GenAIProviderAzureAIOpenAI    = "azure.ai.openai"
	GenAIProviderAzureAIInference = "azure.ai.inference"
	GenAIProviderAnthropic        = "anthropic"
	// GenAIProviderGCPGemini: the generativelanguage.googleapis.com
	// endpoint (Gemini API, "AI Studio").
	GenAIProviderGCPGemini = "gcp.gemini"
	// GenAIProviderGCPVertexAI: the aiplatform.googleapis.com endpoint.
	GenAIProviderGCPVertexAI = "gcp.vertex_ai"
	// GenAIProviderGCPGenAI: any Google generative AI endpoint, where the
	// backend is not known.
	GenAIProviderGCPGenAI   = "gcp.gen_ai"
	GenAIProviderAWSBedrock = "aws.bedrock"
	GenAIProviderCohere     = "cohere"
	GenAIProviderDeepSeek   = "deepseek"
	GenAIProviderGroq       = "groq"
	GenAIProviderIBMWatsonx = "ibm.watsonx.ai"
	GenAIProviderMistralAI  = "mistral_ai"
	GenAIProviderPerplexity = "perplexity"
	GenAIProviderXAI        = "x_ai"
)

// Custom values of GenAIProviderName that xpuscope uses where the
// conventions have no well-known value (the conventions allow custom
// values). They are not OpenTelemetry-defined.
const (
	// GenAIProviderOllama is an Ollama server (native /api/* or its
	// OpenAI-compatible /v1/* endpoints).
	GenAIProviderOllama = "ollama"
	// GenAIProviderOpenAICompatible is an unknown server that speaks the
	// OpenAI REST API (vLLM, TGI, llama.cpp, LiteLLM, another gateway) and
	// that no host map names. Deliberately not "openai": its traffic is not
	// OpenAI's, and must not be priced as OpenAI's.
	GenAIProviderOpenAICompatible = "openai_compatible"
)

// Well-known values of GenAIOperationName (v1.41).
const (
	GenAIOperationChat            = "chat"
	GenAIOperationTextCompletion  = "text_completion"
	GenAIOperationEmbeddings      = "embeddings"
	GenAIOperationGenerateContent = "generate_content"
	GenAIOperationRetrieval       = "retrieval"
	GenAIOperationCreateAgent     = "create_agent"
	GenAIOperationInvokeAgent     = "invoke_agent"
	GenAIOperationInvokeWorkflow  = "invoke_workflow"
	GenAIOperationExecuteTool     = "execute_tool"
)

// Values of GenAITokenType.
const (
	GenAITokenTypeInput  = "input"
	GenAITokenTypeOutput = "output"
)

// Values of OpenAIAPIType.
const (
	OpenAIAPITypeChatCompletions = "chat_completions"
	OpenAIAPITypeResponses       = "responses"
)

// GenAIProviders lists the well-known gen_ai.provider.name values of v1.41.
var GenAIProviders = []string{
	GenAIProviderAnthropic, GenAIProviderAWSBedrock, GenAIProviderAzureAIInference,
	GenAIProviderAzureAIOpenAI, GenAIProviderCohere, GenAIProviderDeepSeek,
	GenAIProviderGCPGemini, GenAIProviderGCPGenAI, GenAIProviderGCPVertexAI,
	GenAIProviderGroq, GenAIProviderIBMWatsonx, GenAIProviderMistralAI,
	GenAIProviderOpenAI, GenAIProviderPerplexity, GenAIProviderXAI,
}

// GenAIOperations lists the well-known gen_ai.operation.name values of
// v1.41.
var GenAIOperations = []string{
	GenAIOperationChat, GenAIOperationCreateAgent, GenAIOperationEmbeddings,
	GenAIOperationExecuteTool, GenAIOperationGenerateContent,
	GenAIOperationInvokeAgent, GenAIOperationInvokeWorkflow,
	GenAIOperationRetrieval, GenAIOperationTextCompletion,
}

// GenAISpanName is the name of a GenAI inference client span, as the
// conventions give it: "{gen_ai.operation.name} {gen_ai.request.model}",
// or the operation alone when the request model is not known. The span
// kind is CLIENT.
func GenAISpanName(operation, requestModel string) string {
	if requestModel == "" {
		return operation
	}
	return operation + " " + requestModel
}

// Bucket boundaries the conventions specify (ExplicitBucketBoundaries).
var (
	genaiTokenBuckets = []float64{
		1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576,
		4194304, 16777216, 67108864,
	}
	// Used by operation.duration and, as the GenAI metrics document gives
	// it, by both streaming metrics (time_to_first_chunk and
	// time_per_output_chunk).
	genaiDurationBuckets = []float64{
		0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24,
		20.48, 40.96, 81.92,
	}
	genaiTimeToFirstTokenBuckets = []float64{
		0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0,
	}
	genaiTimePerOutputTokenBuckets = []float64{
		0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
	}
)

// genaiAttrs are carried by every GenAI client metric.
var genaiAttrs = []attribute.Key{
	GenAIOperationName, GenAIProviderName, GenAIRequestModel,
	GenAIResponseModel, ServerAddress, ServerPort,
}

const genaiNote = "From captured HTTP exchanges of LLM APIs (package genai), not from an SDK in the workload."

// GenAI client metrics (OpenTelemetry) and the cost extension.
var (
	GenAIClientTokenUsage = Metric{
		Name: "gen_ai.client.token.usage", Kind: Histogram, Unit: "{token}", Origin: OTel,
		Description: "Number of input and output tokens used, per operation.",
		Attributes:  with(genaiAttrs, GenAITokenType),
		Buckets:     genaiTokenBuckets,
		Note:        genaiNote + " Only tokens the provider reported: a response without usage (an old streaming API, a cut stream) records nothing. Input includes cached tokens, output includes reasoning tokens.",
	}
	GenAIClientOperationDuration = Metric{
		Name: "gen_ai.client.operation.duration", Kind: Histogram, Unit: "s", Origin: OTel,
		Description: "GenAI operation duration, from the request to the end of the response.",
		Attributes:  with(genaiAttrs, ErrorType),
		Buckets:     genaiDurationBuckets,
		Note:        genaiNote + " error.type is set when the call failed: the provider's error type or code.",
	}
	GenAIClientOperationTimeToFirstChunk = Metric{
		Name: "gen_ai.client.operation.time_to_first_chunk", Kind: Histogram, Unit: "s", Origin: OTel,
		Description: "Time from the request to the first chunk of a streamed response.",
		Attributes:  genaiAttrs,
		Buckets:     genaiDurationBuckets,
		Note:        genaiNote + " Streaming calls only. The first chunk is when the capture saw it, which includes network time.",
	}
	GenAIClientOperationTimePerOutputChunk = Metric{
		Name: "gen_ai.client.operation.time_per_output_chunk", Kind: Histogram, Unit: "s", Origin: OTel,
		Description: "Mean time between consecutive content chunks of a streamed response, after the first; recorded once per call.",
		Attributes:  genaiAttrs,
		Buckets:     genaiDurationBuckets,
		Note:        genaiNote + " Streaming calls only. Chunks are the capture's reads, which may merge or split the server's events.",
	}
	XpuscopeGenAIClientWaitingRequests = Metric{
		Name: "xpuscope.genai.client.waiting_requests", Kind: UpDownCounter, Unit: "{request}", Origin: Extension,
		Description: "Streaming GenAI calls sent in full whose response has not brought a body byte yet: calls the server is queueing, or reading the prompt of.",
		Attributes: []attribute.Key{
			GenAIOperationName, GenAIProviderName, GenAIRequestModel, ServerAddress, ServerPort,
		},
		Note: genaiNote + " Read at each collection from the calls in progress on the captured connections (Capture only; an Emitter fed by the caller has none). An attribute set once seen is reported at 0 while no call waits (the first 256 sets), so that averages over time see the empty moments. Streaming calls only: a call that is not streamed gets its response whole, so it would wait for all of its generation. It counts what the clients on the node wait for, network included: a server's own queue metric (vLLM's num_requests_waiting) leaves out the calls in prefill, and counts those of every client.",
	}
	XpuscopeGenAICost = Metric{
		Name: "xpuscope.genai.cost", Kind: Counter, Unit: "{USD}", Origin: Extension,
		Description: "Estimated cost of GenAI operations in US dollars, from user-given per-token rates.",
		Attributes:  genaiAttrs,
		Note:        "No price table is built in: a call counts only when a rate is configured for its provider and model (or loaded from a LiteLLM price file), and only when the response reported usage. An estimate, not a bill.",
	}
)

const genaiServerNote = "From the captured HTTP exchanges of a process on this node that serves an LLM API (the capture's plaintext ports), measured where the server reads and writes: not the client's figures, which add the network."

// genaiServerAttrs are carried by the gen_ai.server.* metrics: the
// capture's (without the pod, as its client metrics) and genai/serving's
// (with the pod of the server, without the operation).
var genaiServerAttrs = with(genaiAttrs, K8sNamespaceName, K8sPodName, K8sPodUID, K8sContainerName, ContainerID)

// servedNote says which of the two Sources reports a gen_ai.server.*
// metric for a server: never both.
const servedNote = " genai/serving reports the same name from the server's own endpoint, its histogram as the server keeps it (bucket bounds included, never re-bucketed), under its own scope; where both could, the capture leaves the metric to it (genai.WithServedElsewhere), so that no request is counted twice."

// GenAI server metrics (OpenTelemetry): the serving end of a call.
var (
	GenAIServerRequestDuration = Metric{
		Name: "gen_ai.server.request.duration", Kind: Histogram, Unit: "s", Origin: OTel,
		Description:   "GenAI server request duration: from the first byte of the request read to the last byte of the response written.",
		Attributes:    with(genaiServerAttrs, ErrorType),
		Buckets:       genaiDurationBuckets,
		BucketsKeptBy: servingScope,
		Note:          genaiServerNote + " error.type is set for a failed response: the error type it carries, or the HTTP status." + servedNote + " genai/serving: vLLM vllm:e2e_request_latency_seconds, TGI tgi_request_duration, TF Serving :tensorflow:serving:request_latency (microseconds, its bounds converted to seconds).",
	}
	GenAIServerTimeToFirstToken = Metric{
		Name: "gen_ai.server.time_to_first_token", Kind: Histogram, Unit: "s", Origin: OTel,
		Description:   "Time from the request read in full to the first output chunk written, for successful streamed responses.",
		Attributes:    genaiServerAttrs,
		Buckets:       genaiTimeToFirstTokenBuckets,
		BucketsKeptBy: servingScope,
		Note:          genaiServerNote + " The first chunk that carries output: the write the capture saw." + servedNote + " genai/serving: vLLM vllm:time_to_first_token_seconds, Triton nv_inference_first_response_histogram_ms (milliseconds, its bounds converted to seconds).",
	}
	GenAIServerTimePerOutputToken = Metric{
		Name: "gen_ai.server.time_per_output_token", Kind: Histogram, Unit: "s", Origin: OTel,
		Description:   "Time per output token after the first, for successful streamed responses: from the first output chunk written to the last byte, over the output tokens less one.",
		Attributes:    genaiServerAttrs,
		Buckets:       genaiTimePerOutputTokenBuckets,
		BucketsKeptBy: servingScope,
		Note:          genaiServerNote + " Only when the response reported its output tokens, more than one." + servedNote + " genai/serving: vLLM vllm:inter_token_latency_seconds, or vllm:time_per_output_token_seconds of the releases before the rename (the same figure, per token); TGI tgi_request_mean_time_per_token_duration (per request).",
	}
)

var genaiMetrics = []Metric{
	GenAIClientTokenUsage, GenAIClientOperationDuration,
	GenAIClientOperationTimeToFirstChunk, GenAIClientOperationTimePerOutputChunk,
	XpuscopeGenAIClientWaitingRequests, XpuscopeGenAICost,
	GenAIServerRequestDuration, GenAIServerTimeToFirstToken, GenAIServerTimePerOutputToken,
}

// SpanGenAIClient documents the GenAI inference span. Its name is not
// fixed: see GenAISpanName.
var SpanGenAIClient = Span{
	Name:        "{gen_ai.operation.name} {gen_ai.request.model}",
	Description: "One LLM API call (kind CLIENT), from the request to the end of the response; named by GenAISpanName.",
	Attributes: []attribute.Key{
		GenAIOperationName, GenAIProviderName, GenAIRequestModel, ServerAddress, ServerPort,
		GenAIRequestTemperature, GenAIRequestTopP, GenAIRequestMaxTokens, GenAIRequestChoiceCount,
		GenAIRequestStream, GenAIResponseID, GenAIResponseModel, GenAIResponseFinishReasons,
		GenAIResponseTimeToFirstChunk, GenAIUsageInputTokens, GenAIUsageOutputTokens,
		GenAIUsageCacheReadInputTokens, GenAIUsageCacheCreationInputTokens,
		GenAIUsageReasoningOutputTokens, OpenAIAPIType, ErrorType, XpuscopeGenAICostUSD,
		GenAISystemInstructions, GenAIInputMessages, GenAIOutputMessages, XpuscopeGenAIContentTruncated,
		K8sNamespaceName, K8sPodName, K8sPodUID, K8sContainerName, ContainerID, ServiceName,
	},
}

// SpanGenAIServer documents the span of a request a process on the node
// served: kind SERVER, named as the client span.
var SpanGenAIServer = Span{
	Name:        "{gen_ai.operation.name} {gen_ai.request.model} (SERVER)",
	Description: "One LLM API request a process on this node served (kind SERVER), from its first byte read to the last byte of the response written; named by GenAISpanName.",
	Attributes: []attribute.Key{
		GenAIOperationName, GenAIProviderName, GenAIRequestModel, ServerAddress, ServerPort,
		GenAIRequestStream, GenAIResponseID, GenAIResponseModel, GenAIResponseFinishReasons,
		GenAIUsageInputTokens, GenAIUsageOutputTokens, ErrorType,
		K8sNamespaceName, K8sPodName, K8sPodUID, K8sContainerName, ContainerID, ServiceName,
	},
}

var genaiAttributes = []Attribute{
	{GenAIProviderName, "string", "The GenAI provider, as detected from the request's host, path and headers. Custom values: " + GenAIProviderOllama + " (an Ollama server), " + GenAIProviderOpenAICompatible + " (an unknown server speaking the OpenAI API); a configured host map may name others. On the series of genai/serving, the kind of model server: " + GenAIProviderVLLM + ", " + GenAIProviderTGI + ", " + GenAIProviderTriton + ", " + GenAIProviderTorchServe + ", " + GenAIProviderTensorFlowServing + ", " + GenAIProviderONNXRuntime + ".", OTel, append(append(append([]string(nil), GenAIProviders...), GenAIProviderOllama, GenAIProviderOpenAICompatible), GenAIServingProviders...)},
	{GenAIOperationName, "string", "The operation: " + GenAIOperationChat + " for OpenAI Chat Completions and Responses, Anthropic Messages, Bedrock Converse and Ollama chat; " + GenAIOperationGenerateContent + " for Gemini and Vertex generateContent; " + GenAIOperationTextCompletion + " for legacy completions; " + GenAIOperationEmbeddings + ".", OTel, GenAIOperations},
	{GenAIRequestModel, "string", "The model the request names (body, or path for Gemini, Vertex and Bedrock). Capped in cardinality on metrics.", OTel, nil},
	{GenAIRequestTemperature, "double", "Temperature setting of the request.", OTel, nil},
	{GenAIRequestTopP, "double", "top_p setting of the request.", OTel, nil},
	{GenAIRequestMaxTokens, "int", "Maximum number of tokens the request lets the model generate.", OTel, nil},
	{GenAIRequestChoiceCount, "int", "Number of candidate completions requested; set only when not 1.", OTel, nil},
	{GenAIRequestStream, "boolean", "Whether the response was requested as a stream.", OTel, nil},
	{GenAIResponseModel, "string", "The model that generated the response, as the response names it. Capped in cardinality on metrics.", OTel, nil},
	{GenAIResponseID, "string", "The provider's identifier of the completion. Span attribute only.", OTel, nil},
	{GenAIResponseFinishReasons, "string[]", "Why the model stopped, one per generation received. Span attribute only.", OTel, nil},
	{GenAIResponseTimeToFirstChunk, "double", "Seconds from the request to the first chunk of a streamed response. Span attribute only.", OTel, nil},
	{GenAIUsageInputTokens, "int", "Input tokens the provider reported, cached ones included. Span attribute only.", OTel, nil},
	{GenAIUsageOutputTokens, "int", "Output tokens the provider reported, reasoning ones included. Span attribute only.", OTel, nil},
	{GenAIUsageCacheReadInputTokens, "int", "Input tokens served from the provider's prompt cache (part of the input tokens). Span attribute only.", OTel, nil},
	{GenAIUsageCacheCreationInputTokens, "int", "Input tokens written to the provider's prompt cache (part of the input tokens). Span attribute only.", OTel, nil},
	{GenAIUsageReasoningOutputTokens, "int", "Output tokens spent on reasoning (part of the output tokens). Span attribute only.", OTel, nil},
	{GenAITokenType, "string", "Which tokens a gen_ai.client.token.usage point counts.", OTel, []string{GenAITokenTypeInput, GenAITokenTypeOutput}},
	{OpenAIAPIType, "string", "Which OpenAI API the call used (also for Azure OpenAI and OpenAI-compatible servers).", OTel, []string{OpenAIAPITypeChatCompletions, OpenAIAPITypeResponses}},
	{ServerAddress, "string", "Host name or address the GenAI request was sent to.", OTel, nil},
	{ServerPort, "int", "Port the GenAI request was sent to; set when the capture knows it.", OTel, nil},
	{XpuscopeGenAICostUSD, "double", "Estimated cost of the call in US dollars, from user-given rates; absent when no rate is known. Span attribute only.", Extension, nil},
	{GenAISystemInstructions, "string", "System instructions given apart from the conversation, as a JSON array of parts. Only with content capture on (off by default), at most its size cap long. Span attribute only.", OTel, nil},
	{GenAIInputMessages, "string", "The messages sent to the model, as a JSON array of {role, parts}. Only with content capture on (off by default), at most its size cap long. Span attribute only.", OTel, nil},
	{GenAIOutputMessages, "string", "The messages the model returned, as a JSON array of {role, finish_reason, parts}; a stream's deltas joined. Only with content capture on (off by default), at most its size cap long. Span attribute only.", OTel, nil},
	{XpuscopeGenAIContentTruncated, "string[]", "Names of the content attributes (gen_ai.system_instructions, gen_ai.input.messages, gen_ai.output.messages) that are not whole: cut to the size cap (each stays valid JSON), or read from a body the capture cut short. Span attribute only.", Extension, nil},
}
