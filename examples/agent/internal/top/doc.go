// Package top is the reference agent's live terminal view (agent top):
// the node's GPUs, the processes using them and their kernels, the LLM
// calls of the node's clients, its model servers and training jobs, and
// the agent's features and self-metric alarms.
//
// It reads a running agent's Prometheus endpoint (HTTPSource), so that
// opening it adds no second set of probes, or the registry of Sources
// started in the same process (GathererSource). A Refresher scrapes the
// Source and builds a Frame: the rows of every view, with rates from the
// counters' deltas since the last refresh and percentiles from the
// histograms' bucket deltas. Every metric and label it reads is a semconv
// descriptor, named as the OpenTelemetry Prometheus exporter names it.
//
// The screen is a Bubble Tea program (Model), laid out with Lip Gloss and
// Bubbles' keys, help and text input; Once renders a Frame as plain text.
// A refresh runs beside the screen, never in its way: a slow or vanished
// agent leaves the last Frame on screen, marked stale.
package top
