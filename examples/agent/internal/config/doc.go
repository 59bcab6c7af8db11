// Package config loads the reference agent's configuration: an optional
// YAML file (the agent's -config flag) and the standard OpenTelemetry
// environment variables, checked in full before anything attaches.
//
// # The file
//
// testdata/full.yaml sets every key there is, with a comment on each; the
// Config type documents them too. The file is strict:
//
//   - An unknown key, a value of the wrong type and a value out of range
//     are errors that give the file, line, column and key path (see
//     below). Every problem is reported, not only the first.
//   - There are no per-feature GPU keys: GPU detection is automatic, and a
//     gpu: section is an error that says so.
//   - A key given twice, a second YAML document, aliases (*name) and
//     merge keys (<<) are errors. A key with no value (null) is the same
//     as no key. An empty file is all defaults.
//   - Files over MaxFileSize are refused before they are parsed.
//
// For example:
//
//	agent.yaml:4:1: unknown key "gpu" (GPU detection is automatic; there are no per-feature GPU keys)
//	agent.yaml:9:43: aiml.llm.cost_rates."openai/gpt-4".input_cost_per_1m: want a number, got "cheap"
//
// # The environment
//
// Load reads OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_METRIC_EXPORT_INTERVAL (milliseconds), OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_PROTOCOL (grpc or http/protobuf),
// OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_INSECURE, and the
// per-signal forms of the last four, OTEL_EXPORTER_OTLP_METRICS_… and
// OTEL_EXPORTER_OTLP_TRACES_…. An empty variable is unset.
// OTEL_RESOURCE_ATTRIBUTES and the HEADERS variables are
// key=value,key=value lists with percent-encoded values; an entry without
// "=", an empty entry or a bad %XX escape is an error, and of two entries
// for one key the later wins. Unlike the specification, which reads
// anything but "true" as false, INSECURE must be true or false
// (any case): a typo is an error, not plain text.
//
// # Precedence
//
// Each setting is resolved on its own: the file's value, else the
// environment variable's, else the default. This is the OpenTelemetry
// SDK rule that environment variables are defaults which explicit
// configuration overrides. Map-valued settings (resource attributes, OTLP
// headers) resolve per entry: the entries of both are kept, and for a key
// both give, the file's value wins.
//
// For OTLP, a signal's own settings (export.otlp.metrics.endpoint,
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, …), resolved that way, override
// the general ones (export.otlp.endpoint, OTEL_EXPORTER_OTLP_ENDPOINT),
// so the metrics endpoint is the first of: file per-signal, environment
// per-signal, file general, environment general. Headers merge in the
// same order. A signal is exported over OTLP only when it has an
// endpoint; with http/protobuf, a general endpoint gets /v1/metrics or
// /v1/traces appended and a per-signal one is used as it is.
//
// The service name is the file's service_name, else OTEL_SERVICE_NAME,
// else service.name in OTEL_RESOURCE_ATTRIBUTES, else DefaultServiceName.
//
// Keys that have no OpenTelemetry variable (aiml, export.prometheus,
// log_level) come from the file or the defaults only.
package config
