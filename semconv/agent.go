package semconv

import "go.opentelemetry.io/otel/attribute"

// Self-metrics of the reference agent (examples/agent).
const (
	XpuscopeFeature      = attribute.Key("xpuscope.feature")
	XpuscopeFeatureState = attribute.Key("xpuscope.feature.state")
	// XpuscopeFeatureReason is why a feature is not active: its error's
	// first line, at most MaxFeatureReason bytes; absent for an active one.
	XpuscopeFeatureReason = attribute.Key("xpuscope.feature.reason")
	XpuscopeSignal        = attribute.Key("xpuscope.signal")
)

// MaxFeatureReason bounds the length of an XpuscopeFeatureReason value.
const MaxFeatureReason = 200

// Values of XpuscopeFeatureState.
const (
	FeatureActive      = "active"      // started
	FeatureUnavailable = "unavailable" // a library, device, kernel feature or privilege is missing: the agent runs without it
	FeatureFault       = "fault"       // bad configuration or a bug: the agent does not start
)

// Values of XpuscopeSignal.
const (
	SignalMetrics = "metrics"
	SignalTraces  = "traces"
)

var (
	XpuscopeAgentFeatureState = Metric{
		Name: "xpuscope.agent.feature.state", Kind: UpDownCounter, Unit: "{feature}", Origin: Self,
		Description: "1 for the state each of the agent's features is in (active, unavailable, fault), 0 for the others; with why, where it is not active.",
		Attributes:  []attribute.Key{XpuscopeFeature, XpuscopeFeatureState, XpuscopeFeatureReason},
	}
	XpuscopeAgentExportFailures = Metric{
		Name: "xpuscope.agent.export.failures", Kind: Counter, Unit: "{export}", Origin: Self,
		Description: "OTLP exports that failed, by signal. The agent goes on; the data of a failed export is lost.",
		Attributes:  []attribute.Key{XpuscopeSignal},
	}
)

var agentMetrics = []Metric{XpuscopeAgentFeatureState, XpuscopeAgentExportFailures}

var agentAttributes = []Attribute{
	{XpuscopeFeature, "string", "A feature of the reference agent: the pod resolver (podjoin) or one Source (gpu, pmu, cudatrace, hiptrace, serving, training, node, genai, intelpt).", Self, []string{"podjoin", "gpu", "pmu", "cudatrace", "hiptrace", "serving", "training", "node", "genai", "intelpt"}},
	{XpuscopeFeatureState, "string", "What became of a feature at start-up.", Self, []string{FeatureActive, FeatureUnavailable, FeatureFault}},
	{XpuscopeFeatureReason, "string", "Why a feature is not active, as -check says it: the first line of its error, at most 200 bytes. One value per feature, set at start-up; absent for an active feature.", Self, nil},
	{XpuscopeSignal, "string", "An OpenTelemetry signal the agent exports.", Self, []string{SignalMetrics, SignalTraces}},
}
