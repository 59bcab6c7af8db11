// Package serving finds the model servers running on the node and reads
// their own metrics, with no configuration: vLLM, Hugging Face TGI and
// NVIDIA Triton in full; TorchServe and TensorFlow Serving in part (their
// request counters and times); ONNX Runtime, a library, as present.
//
// A server is recognised from its processes (package internal/procfs, in
// every pid and mount namespace): its executable, command line and
// process title, and for ONNX Runtime the libraries it maps. vLLM's API
// server (vllm serve, or the module vllm.entrypoints.openai.api_server)
// and its engine core (titled VLLM::EngineCore, "VLLM::EngineCor" in
// comm, which keeps 15 bytes) are different processes, the one holding
// the port and the other the GPU: each process joins the farthest
// ancestor of its kind, and they are one server. So are TGI's launcher,
// router and shards, and TorchServe's frontend and workers.
//
// The metrics endpoint is found from the server's processes, never
// configured: their listening sockets (the socket inodes of their fds
// matched to the TCP sockets of their network namespace), tried in the
// order their flags and defaults make likely (vLLM's --port, TGI's
// --prometheus-port, Triton's --metrics-port, TF Serving's
// --rest_api_port and the path of its --monitoring_config_file), and
// confirmed by a scrape that serves metrics of the server's kind (and for
// TGI by its /info, which also names its model). The scrape is made from
// inside the server's network namespace, on a socket a locked OS thread
// makes there and which the thread's end throws away, so that a server
// bound to 127.0.0.1 in its pod is read without host networking. Scrapes
// run side by side, each within a timeout, with a cap on the body; a
// failing server is tried again after a backoff, and looked for again
// after three failures; a server whose processes are gone is forgotten.
//
// The exposition is parsed by github.com/prometheus/common/expfmt (the
// Prometheus text format, or OpenMetrics where the server answers it),
// and mapped to one vocabulary, package semconv's: OpenTelemetry's
// gen_ai.server.request.duration, gen_ai.server.time_to_first_token and
// gen_ai.server.time_per_output_token where the server measures them,
// and extensions for what the conventions lack (xpuscope.genai.server.*:
// requests waiting and running, KV-cache use and capacity, tokens,
// preemptions, requests by outcome, Triton's and TorchServe's cumulative
// times). Both generations of vLLM's names are read (before and after
// its 0.9 renames: gpu_cache_usage_perc and kv_cache_usage_perc,
// time_per_output_token_seconds and inter_token_latency_seconds), the new
// one where a release exports both, so that dashboards keep their series
// across an upgrade. Every series carries gen_ai.provider.name (the
// server's kind), the model the server names as gen_ai.request.model and
// gen_ai.response.model, server.port, and with WithResolver the pod and
// container of the process holding the port.
//
// # Histograms, as each server keeps them
//
// A server's histograms come aggregated, over its own bucket bounds. They
// are reported as they are, bounds included, never re-bucketed: by the
// Producer (NewProducer, WithProducer), a go.opentelemetry.io/otel/sdk/metric
// Producer registered on the readers, because an SDK histogram instrument
// has fixed bounds and records one value at a time. Without a Producer the
// histograms are left out, and Status says so.
//
// # Caps
//
// The servers read (WithMaxServers), the models of a server with series
// of their own (WithMaxModels: the others fold into _OTHER), the series
// of a server (WithMaxSeries), the distinct error types and finish
// reasons of a server (64) and its processes listed (64) are capped; what
// goes past a cap, and what the mapping refuses (a histogram whose counts
// decrease, a value that is not finite), is counted in
// xpuscope.genai.serving.overflow. Failed scrapes are counted by why in
// xpuscope.genai.serving.scrapes.
//
// # With the genai capture
//
// The capture of package genai reports the requests a process on the
// node serves as gen_ai.server.* too, from the HTTP it captures. Where the
// Source reports a server's own figure, the capture leaves that metric of
// the server's processes to it (genai.WithServedElsewhere, given
// Source.Reports): no request is counted twice. docs/genai-serving.md
// says which figure is exported under which name.
package serving
