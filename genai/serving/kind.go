package serving

import "github.com/xpuscope/xpuscope/semconv"

// Kind is a kind of model server, as its series' gen_ai.provider.name
// names it.
type Kind string

// The kinds of model server the Source recognises.
const (
	// VLLM is vLLM's OpenAI-compatible server (vllm serve, or the module
	// vllm.entrypoints.openai.api_server), with its engine core and GPU
	// workers, which are processes of their own.
	VLLM Kind = semconv.GenAIProviderVLLM
	// TGI is Hugging Face's Text Generation Inference: its launcher, its
	// router (which holds the port) and its Python shards.
	TGI Kind = semconv.GenAIProviderTGI
	// Triton is NVIDIA's Triton Inference Server, tritonserver.
	Triton Kind = semconv.GenAIProviderTriton
	// TorchServe is PyTorch's TorchServe: its Java frontend
	// (org.pytorch.serve.ModelServer) and Python backend workers. Read in
	// part: its request counters and cumulative times.
	TorchServe Kind = semconv.GenAIProviderTorchServe
	// TFServing is TensorFlow Serving, tensorflow_model_server. Read in
	// part: its request counter and latency; only when started with
	// --monitoring_config_file, without which it serves no metrics.
	TFServing Kind = semconv.GenAIProviderTensorFlowServing
	// ONNXRuntime is a process that maps ONNX Runtime's library
	// (libonnxruntime*): a library, not a server, so it has no endpoint.
	// It is reported present, with its processes, for the join to their
	// GPUs.
	ONNXRuntime Kind = semconv.GenAIProviderONNXRuntime
)

// Kinds lists the kinds of model server the Source recognises.
func Kinds() []Kind { return []Kind{VLLM, TGI, Triton, TorchServe, TFServing, ONNXRuntime} }
