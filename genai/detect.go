package genai

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/xpuscope/xpuscope/semconv"
)

// API is the wire format of an exchange's bodies: which parser reads it.
// Several providers share one API (vLLM, Groq and Azure OpenAI all speak
// APIOpenAIChatCompletions), so the provider does not say it.
type API string

// APIs Detect recognises.
const (
	APIOpenAIChatCompletions API = "openai.chat_completions" // POST …/chat/completions
	APIOpenAICompletions     API = "openai.completions"      // POST …/completions (legacy)
	APIOpenAIResponses       API = "openai.responses"        // POST …/responses
	APIOpenAIEmbeddings      API = "openai.embeddings"       // POST …/embeddings
	APIAnthropicMessages     API = "anthropic.messages"      // POST /v1/messages; Vertex rawPredict of Anthropic models
	APIGeminiGenerateContent API = "gemini.generate_content" // :generateContent, :streamGenerateContent (Gemini API and Vertex AI)
	APIGeminiEmbedContent    API = "gemini.embed_content"    // :embedContent, :batchEmbedContents
	APIBedrockConverse       API = "bedrock.converse"        // /model/{id}/converse, /converse-stream
	APIBedrockInvoke         API = "bedrock.invoke"          // /model/{id}/invoke, /invoke-with-response-stream (body is the model family's own)
	APIOllamaChat            API = "ollama.chat"             // /api/chat
	APIOllamaGenerate        API = "ollama.generate"         // /api/generate
	APIOllamaEmbed           API = "ollama.embed"            // /api/embed, /api/embeddings
)

// Endpoint is what Detect reads from an exchange's request line, Host and
// headers (and, for a few ambiguous cases, the first bytes of the request
// body).
type Endpoint struct {
	Provider  string // gen_ai.provider.name: a semconv.GenAIProvider… value, or a HostMap's
	Operation string // gen_ai.operation.name: a semconv.GenAIOperation… value
	API       API
	// Model is the request model when the path carries it (Gemini, Vertex
	// AI, Bedrock), URL-unescaped; "" otherwise (the body names it).
	Model string
	// Stream is set when the path asks for a streamed response (Gemini
	// :streamGenerateContent, Vertex :streamRawPredict, Bedrock
	// /converse-stream and /invoke-with-response-stream). Other APIs ask
	// for a stream in the body.
	Stream bool
	// APIVersion is the api-version query parameter (Azure), the
	// Anthropic-Version header (Anthropic Messages), or the path's version
	// segment (Gemini API, Vertex AI: "v1beta", "v1"); "" when none.
	APIVersion string
	// Deployment is the Azure OpenAI deployment of a
	// /openai/deployments/{deployment}/… path: a name the user chose, not a
	// model name.
	Deployment string
	// Region is the AWS region of a Bedrock host or the location of a
	// Vertex AI path.
	Region string
	// ServerAddress and ServerPort are the request's host, lower case,
	// without brackets, and its port (0 when the Host carried none).
	ServerAddress string
	ServerPort    int
}

// OpenAIAPIType returns the openai.api.type value of the endpoint:
// chat_completions or responses, or "" for other APIs.
func (e Endpoint) OpenAIAPIType() string {
	switch e.API {
	case APIOpenAIChatCompletions:
		return semconv.OpenAIAPITypeChatCompletions
	case APIOpenAIResponses:
		return semconv.OpenAIAPITypeResponses
	}
	return ""
}

// HostMap names the provider behind hosts Detect does not know by name:
// self-hosted OpenAI-compatible servers (vLLM, TGI, llama.cpp), gateways
// (LiteLLM, an API manager), a private endpoint of a cloud provider. Keys
// are "host:port" or "host" (a "host:port" key wins over a "host" key),
// lower case, IPv6 in brackets when a port is given ("[fd00::7]:8000");
// values are gen_ai.provider.name values, well-known ones
// (semconv.GenAIProvider…) where one applies. Build it with NewHostMap,
// which normalises and checks keys; a map literal works when its keys are
// already in that form.
//
// On a mapped host every API shape Detect knows is accepted, under any
// path prefix (a gateway's /litellm/v1/chat/completions), and the mapped
// name is the provider whatever the path.
type HostMap map[string]string

// Bounds on what Detect reads: longer fields are not LLM API traffic.
const (
	maxHostLen      = 300
	maxPathLen      = 8 << 10
	maxBodyScan     = 64 << 10
	maxModelLen     = 256
	maxVersionLen   = 64
	maxProviderLen  = 128
	maxHostMapEntry = 10000
	ollamaPort      = 11434
)

// NewHostMap checks and normalises host → provider entries: keys are
// "host" or "host:port" (port 1-65535), case-insensitive; providers are
// non-empty printable names. It errors on a bad entry, naming it, and on
// two keys that normalise to the same one.
func NewHostMap(entries map[string]string) (HostMap, error) {
	if len(entries) > maxHostMapEntry {
		return nil, fmt.Errorf("genai: host map has %d entries, more than %d", len(entries), maxHostMapEntry)
	}
	m := make(HostMap, len(entries))
	for k, v := range entries {
		host, port, ok := splitHost(k)
		if !ok || host == "" {
			return nil, fmt.Errorf("genai: host map key %q is not host or host:port", k)
		}
		if v == "" || len(v) > maxProviderLen || !printable(v) {
			return nil, fmt.Errorf("genai: host map entry %q: provider %q is empty, too long or not printable", k, v)
		}
		key := host
		if port != 0 {
			key = net.JoinHostPort(host, strconv.Itoa(port))
		}
		if prev, dup := m[key]; dup {
			return nil, fmt.Errorf("genai: host map key %q given twice (as %s → %s and → %s)", key, k, v, prev)
		}
		m[key] = v
	}
	return m, nil
}

func (m HostMap) lookup(host string, port int) (string, bool) {
	if len(m) == 0 || host == "" {
		return "", false
	}
	if port != 0 {
		if p, ok := m[net.JoinHostPort(host, strconv.Itoa(port))]; ok {
			return p, true
		}
	}
	p, ok := m[host]
	return p, ok
}

// hostClass says how much of the path grammar a host accepts.
type hostClass int

const (
	classUnknown   hostClass = iota
	classOpenAI              // api.openai.com: /v1/<endpoint> exactly
	classCompat              // an OpenAI-compatible SaaS API: <anything>/<endpoint>
	classAzure               // Azure OpenAI and Azure AI model inference
	classAnthropic           // api.anthropic.com
	classGemini              // generativelanguage.googleapis.com
	classVertex              // [location-]aiplatform.googleapis.com
	classBedrock             // bedrock-runtime.<region>.amazonaws.com
	classMapped              // a HostMap entry or Ollama's port: every shape
)

// knownHosts are hosts that serve one provider's API.
var knownHosts = map[string]struct {
	provider string
	class    hostClass
}{
	"api.openai.com":                    {semconv.GenAIProviderOpenAI, classOpenAI},
	"api.anthropic.com":                 {semconv.GenAIProviderAnthropic, classAnthropic},
	"generativelanguage.googleapis.com": {semconv.GenAIProviderGCPGemini, classGemini},
	"aiplatform.googleapis.com":         {semconv.GenAIProviderGCPVertexAI, classVertex},
	"api.mistral.ai":                    {semconv.GenAIProviderMistralAI, classCompat},
	"api.groq.com":                      {semconv.GenAIProviderGroq, classCompat},
	"api.deepseek.com":                  {semconv.GenAIProviderDeepSeek, classCompat},
	"api.x.ai":                          {semconv.GenAIProviderXAI, classCompat},
	"api.perplexity.ai":                 {semconv.GenAIProviderPerplexity, classCompat},
	"api.cohere.com":                    {semconv.GenAIProviderCohere, classCompat},
	"api.cohere.ai":                     {semconv.GenAIProviderCohere, classCompat},
}

// hostProvider classifies a normalised host name.
func hostProvider(host string) (provider, region string, class hostClass) {
	if k, ok := knownHosts[host]; ok {
		return k.provider, "", k.class
	}
	switch {
	case hasLabelSuffix(host, ".openai.azure.com"), hasLabelSuffix(host, ".cognitiveservices.azure.com"),
		hasLabelSuffix(host, ".services.ai.azure.com"):
		// Which Azure provider depends on the path (/openai/… or /models/…).
		return semconv.GenAIProviderAzureAIOpenAI, "", classAzure
	case hasLabelSuffix(host, ".inference.ai.azure.com"), hasLabelSuffix(host, ".models.ai.azure.com"):
		return semconv.GenAIProviderAzureAIInference, "", classAzure
	case hasLabelSuffix(host, "-aiplatform.googleapis.com"):
		return semconv.GenAIProviderGCPVertexAI, strings.TrimSuffix(host, "-aiplatform.googleapis.com"), classVertex
	}
	if r, ok := bedrockRegion(host); ok {
		return semconv.GenAIProviderAWSBedrock, r, classBedrock
	}
	return "", "", classUnknown
}

// bedrockRegion recognises bedrock-runtime[-fips].<region>.amazonaws.com[.cn]
// and VPC endpoint names with a bedrock-runtime label
// (vpce-….bedrock-runtime.<region>.vpce.amazonaws.com).
func bedrockRegion(host string) (string, bool) {
	if !strings.HasSuffix(host, ".amazonaws.com") && !strings.HasSuffix(host, ".amazonaws.com.cn") {
		return "", false
	}
	labels := strings.Split(host, ".")
	for i := 0; i+1 < len(labels); i++ {
		if labels[i] == "bedrock-runtime" || labels[i] == "bedrock-runtime-fips" {
			return labels[i+1], true
		}
	}
	return "", false
}

func hasLabelSuffix(host, suffix string) bool {
	return len(host) > len(suffix) && strings.HasSuffix(host, suffix)
}

// Detect finds the provider, operation and API of an exchange from its
// Host, request target, a few non-secret headers (Anthropic-Version,
// X-Amz-Date) and, where the path leaves the operation open, the top-level
// keys of the request body. ok is false when the exchange is not a
// generation or embedding call of an API Detect knows (another endpoint,
// a GET, a non-LLM host).
//
// Recognised (path prefixes before the /v1 of OpenAI-style paths are
// accepted where noted):
//
//   - OpenAI, api.openai.com: POST /v1/chat/completions → chat,
//     /v1/completions → text_completion, /v1/embeddings → embeddings,
//     /v1/responses → chat. The Responses API is OpenAI's chat generation
//     API (the successor of Chat Completions); the conventions have no
//     operation of its own for it and tell the two apart with
//     openai.api.type (Endpoint.OpenAIAPIType), not with the operation.
//   - Azure OpenAI (*.openai.azure.com, *.cognitiveservices.azure.com,
//     *.services.ai.azure.com): /openai/deployments/{deployment}/{endpoint}
//     and the newer /openai/v1/{endpoint} and /openai/{endpoint};
//     api-version is returned. Azure AI model inference
//     (/models/chat/completions, *.inference.ai.azure.com,
//     *.models.ai.azure.com) → azure.ai.inference.
//   - Anthropic, api.anthropic.com: /v1/messages → chat (and its OpenAI
//     compatibility endpoints).
//   - Gemini API, generativelanguage.googleapis.com:
//     /{v1,v1beta,v1alpha}/models/{model}:generateContent and
//     :streamGenerateContent → generate_content, :embedContent and
//     :batchEmbedContents → embeddings (also tunedModels/); its OpenAI
//     compatibility endpoints (/v1beta/openai/chat/completions).
//   - Vertex AI, aiplatform.googleapis.com and
//     {location}-aiplatform.googleapis.com:
//     /{v1,v1beta1}/projects/{p}/locations/{l}/publishers/{pub}/models/{model}:{method}
//     with the Gemini methods above, and :rawPredict / :streamRawPredict
//     of Anthropic models (Anthropic Messages body) → chat;
//     …/endpoints/{id}:generateContent; the OpenAI-compatible
//     …/endpoints/openapi/chat/completions.
//   - AWS Bedrock runtime, bedrock-runtime.{region}.amazonaws.com:
//     /model/{modelId}/converse and /converse-stream → chat;
//     /model/{modelId}/invoke and /invoke-with-response-stream → chat,
//     text_completion or embeddings after the body (top-level
//     "messages", "prompt" or "inputText", "texts"; an embedding model id);
//     the model id is URL-unescaped.
//   - Ollama on port 11434 (or a host mapped to it): /api/chat → chat,
//     /api/generate → text_completion, /api/embed and /api/embeddings →
//     embeddings, and its OpenAI-compatible /v1/… endpoints.
//   - Mistral, Groq, DeepSeek, xAI, Perplexity, Cohere (compatibility
//     API): their OpenAI-compatible endpoints under any prefix.
//   - Hosts in hosts: every shape above, under any prefix, with the
//     mapped provider.
//   - Any other host: the shapes whose path alone is unmistakable —
//     {prefix}/v1/{chat/completions,completions,responses,embeddings} →
//     openai_compatible (also {prefix}/chat/completions when the body has
//     top-level "messages"); Vertex AI paths → gcp.vertex_ai; Gemini
//     paths → gcp.gen_ai; /openai/deployments/… with an api-version →
//     azure.ai.openai; {prefix}/v1/messages with an Anthropic-Version
//     header → anthropic; Bedrock paths with an X-Amz-Date header →
//     aws.bedrock.
//
// A request whose Method is set and is not POST is never a call. Work is
// bounded: Host over 300 bytes or a target over 8 KiB is rejected, and at
// most the first 64 KiB of the body are scanned.
func Detect(x *Exchange, hosts HostMap) (e Endpoint, ok bool) {
	if x == nil || (x.Method != "" && !strings.EqualFold(x.Method, "POST")) {
		return Endpoint{}, false
	}
	hostField, target := x.Host, x.Path
	// Absolute-form request target (a forward proxy's view).
	for _, scheme := range []string{"http://", "https://"} {
		if len(target) >= len(scheme) && strings.EqualFold(target[:len(scheme)], scheme) {
			rest := target[len(scheme):]
			authority, p := rest, "/"
			if i := strings.IndexAny(rest, "/?"); i >= 0 {
				authority, p = rest[:i], rest[i:]
				if p[0] == '?' {
					p = "/" + p
				}
			}
			if hostField == "" {
				hostField = authority
			}
			target = p
			break
		}
	}
	if len(target) > maxPathLen || len(target) == 0 || target[0] != '/' {
		return Endpoint{}, false
	}
	host, port, hostOK := splitHost(hostField)
	if !hostOK {
		return Endpoint{}, false
	}
	path, query, _ := strings.Cut(target, "?")
	path, _, _ = strings.Cut(path, "#")
	if len(path) > 1 {
		path = strings.TrimSuffix(path, "/")
	}

	provider, region, class := hostProvider(host)
	if p, mapped := hosts.lookup(host, port); mapped {
		provider, class = p, classMapped
	} else if class == classUnknown && port == ollamaPort {
		provider, class = semconv.GenAIProviderOllama, classMapped
	}

	r, ok := route(class, path, x)
	if !ok {
		return Endpoint{}, false
	}
	if r.provider != "" && class != classMapped {
		provider = r.provider
	}
	if r.region != "" {
		region = r.region
	}
	e = Endpoint{
		Provider:      provider,
		Operation:     r.op,
		API:           r.api,
		Model:         r.model,
		Stream:        r.stream,
		APIVersion:    r.version,
		Deployment:    r.deployment,
		Region:        cleanField(region, maxVersionLen),
		ServerAddress: host,
		ServerPort:    port,
	}
	if e.APIVersion == "" && query != "" {
		e.APIVersion = cleanField(queryParam(query, "api-version"), maxVersionLen)
	}
	if e.Provider == "" || e.Operation == "" {
		return Endpoint{}, false
	}
	return e, true
}

// routed is what a path matcher found.
type routed struct {
	api        API
	op         string
	model      string
	stream     bool
	version    string
	deployment string
	region     string
	// provider overrides the host's provider (Azure AI inference paths,
	// unknown hosts); "" keeps it.
	provider string
}

func route(class hostClass, path string, x *Exchange) (routed, bool) {
	switch class {
	case classOpenAI:
		return openAIRoute(path, v1Exact)
	case classCompat:
		if r, ok := anthropicRoute(path, x, false); ok {
			return r, true
		}
		return openAIRoute(path, anyPrefix)
	case classAnthropic:
		if path == "/v1/messages" {
			return anthropicRoute(path, x, false)
		}
		return openAIRoute(path, v1Exact)
	case classAzure:
		return azureRoute(path, x, true)
	case classGemini:
		if r, ok := geminiRoute(path); ok {
			return r, true
		}
		return openAIRoute(path, anyPrefix)
	case classVertex:
		if r, ok := vertexRoute(path); ok {
			return r, true
		}
		return openAIRoute(path, anyPrefix)
	case classBedrock:
		return bedrockRoute(path, x.RequestBody)
	case classMapped:
		for _, f := range []func() (routed, bool){
			func() (routed, bool) { return ollamaRoute(path) },
			func() (routed, bool) { return vertexRoute(path) },
			func() (routed, bool) { return geminiRoute(path) },
			func() (routed, bool) { return bedrockRoute(path, x.RequestBody) },
			func() (routed, bool) { return azureRoute(path, x, false) },
			func() (routed, bool) { return anthropicRoute(path, x, false) },
			func() (routed, bool) { return openAIRoute(path, anyPrefix) },
		} {
			if r, ok := f(); ok {
				return r, true
			}
		}
		return routed{}, false
	}
	// Unknown host: only shapes the path (and a header) make unmistakable.
	if r, ok := vertexRoute(path); ok {
		r.provider = semconv.GenAIProviderGCPVertexAI
		return r, true
	}
	if r, ok := geminiRoute(path); ok {
		r.provider = semconv.GenAIProviderGCPGenAI
		return r, true
	}
	if x.RequestHeader.Get("X-Amz-Date") != "" {
		if r, ok := bedrockRoute(path, x.RequestBody); ok {
			r.provider = semconv.GenAIProviderAWSBedrock
			return r, true
		}
	}
	if strings.HasPrefix(path, "/openai/deployments/") && strings.Contains(x.Path, "api-version=") {
		if r, ok := azureRoute(path, x, false); ok {
			r.provider = semconv.GenAIProviderAzureAIOpenAI
			return r, true
		}
	}
	if r, ok := anthropicRoute(path, x, true); ok {
		r.provider = semconv.GenAIProviderAnthropic
		return r, true
	}
	if r, ok := openAIRoute(path, v1Suffix); ok {
		r.provider = semconv.GenAIProviderOpenAICompatible
		return r, true
	}
	if strings.HasSuffix(path, "/chat/completions") && topLevelKeys(x.RequestBody, "messages")&1 != 0 {
		r, _ := openAIRoute(path, anyPrefix)
		r.provider = semconv.GenAIProviderOpenAICompatible
		return r, true
	}
	return routed{}, false
}

// prefixRule says what may stand before an OpenAI endpoint suffix.
type prefixRule int

const (
	v1Exact   prefixRule = iota // exactly /v1
	v1Suffix                    // anything ending in /v1
	anyPrefix                   // anything
)

var openAIEndpoints = []struct {
	suffix string
	api    API
	op     string
}{
	{"/chat/completions", APIOpenAIChatCompletions, semconv.GenAIOperationChat},
	{"/completions", APIOpenAICompletions, semconv.GenAIOperationTextCompletion},
	{"/responses", APIOpenAIResponses, semconv.GenAIOperationChat},
	{"/embeddings", APIOpenAIEmbeddings, semconv.GenAIOperationEmbeddings},
}

func openAIRoute(path string, rule prefixRule) (routed, bool) {
	for _, ep := range openAIEndpoints {
		prefix, ok := strings.CutSuffix(path, ep.suffix)
		if !ok {
			continue
		}
		switch rule {
		case v1Exact:
			ok = prefix == "/v1"
		case v1Suffix:
			ok = prefix == "/v1" || strings.HasSuffix(prefix, "/v1")
		}
		if !ok {
			return routed{}, false
		}
		return routed{api: ep.api, op: ep.op}, true
	}
	return routed{}, false
}

// anthropicRoute matches {prefix}/v1/messages. needHeader: only with an
// Anthropic-Version header (unknown hosts).
func anthropicRoute(path string, x *Exchange, needHeader bool) (routed, bool) {
	if path != "/v1/messages" && !strings.HasSuffix(path, "/v1/messages") {
		return routed{}, false
	}
	v := x.RequestHeader.Get("Anthropic-Version")
	if needHeader && v == "" {
		return routed{}, false
	}
	return routed{api: APIAnthropicMessages, op: semconv.GenAIOperationChat, version: cleanField(v, maxVersionLen)}, true
}

// azureRoute matches Azure OpenAI (/openai/…) and Azure AI model inference
// (/models/… on an Azure host) paths.
func azureRoute(path string, x *Exchange, azureHost bool) (routed, bool) {
	if rest, ok := strings.CutPrefix(path, "/openai/deployments/"); ok {
		dep, tail, _ := strings.Cut(rest, "/")
		if dep == "" || tail == "" {
			return routed{}, false
		}
		r, ok := openAIRoute("/"+tail, anyPrefix)
		if !ok {
			return routed{}, false
		}
		r.deployment = cleanField(unescape(dep), maxModelLen)
		if azureHost {
			r.provider = semconv.GenAIProviderAzureAIOpenAI
		}
		return r, true
	}
	if strings.HasPrefix(path, "/openai/") {
		r, ok := openAIRoute(path, anyPrefix)
		if ok && azureHost {
			r.provider = semconv.GenAIProviderAzureAIOpenAI
		}
		return r, ok
	}
	if !azureHost {
		return routed{}, false
	}
	// Azure AI model inference: /models/chat/completions, or the root
	// paths of serverless endpoints.
	r, ok := openAIRoute(path, anyPrefix)
	if ok {
		r.provider = semconv.GenAIProviderAzureAIInference
	}
	return r, ok
}

// geminiMethods maps Gemini API / Vertex AI methods to API and operation.
var geminiMethods = map[string]struct {
	api    API
	op     string
	stream bool
}{
	"generateContent":       {APIGeminiGenerateContent, semconv.GenAIOperationGenerateContent, false},
	"streamGenerateContent": {APIGeminiGenerateContent, semconv.GenAIOperationGenerateContent, true},
	"embedContent":          {APIGeminiEmbedContent, semconv.GenAIOperationEmbeddings, false},
	"batchEmbedContents":    {APIGeminiEmbedContent, semconv.GenAIOperationEmbeddings, false},
}

// modelMethod splits the last segment "{model}:{method}" (the colon may
// arrive escaped) and unescapes the model.
func modelMethod(seg string) (model, method string, ok bool) {
	seg = unescape(seg)
	i := strings.LastIndexByte(seg, ':')
	if i <= 0 || i == len(seg)-1 {
		return "", "", false
	}
	return cleanField(seg[:i], maxModelLen), seg[i+1:], true
}

// geminiRoute matches /{v1,v1beta,v1alpha}/{models,tunedModels}/{model}:{method}.
func geminiRoute(path string) (routed, bool) {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(segs) != 3 || (segs[1] != "models" && segs[1] != "tunedModels") {
		return routed{}, false
	}
	switch segs[0] {
	case "v1", "v1beta", "v1alpha":
	default:
		return routed{}, false
	}
	model, method, ok := modelMethod(segs[2])
	m, known := geminiMethods[method]
	if !ok || !known {
		return routed{}, false
	}
	return routed{api: m.api, op: m.op, stream: m.stream, model: model, version: segs[0]}, true
}

// vertexRoute matches
// /{v1,v1beta1}/projects/{p}/locations/{l}/publishers/{pub}/models/{model}:{method}
// and /{v1,v1beta1}/projects/{p}/locations/{l}/endpoints/{id}:{method}.
func vertexRoute(path string) (routed, bool) {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(segs) < 6 || (segs[0] != "v1" && segs[0] != "v1beta1") || segs[1] != "projects" || segs[3] != "locations" {
		return routed{}, false
	}
	r := routed{version: segs[0], region: segs[4]}
	var last, publisher string
	switch {
	case len(segs) == 9 && segs[5] == "publishers" && segs[7] == "models":
		publisher, last = segs[6], segs[8]
	case len(segs) == 7 && segs[5] == "endpoints":
		last = segs[6]
	default:
		return routed{}, false
	}
	model, method, ok := modelMethod(last)
	if !ok {
		return routed{}, false
	}
	if publisher != "" {
		r.model = model
	}
	if m, known := geminiMethods[method]; known {
		r.api, r.op, r.stream = m.api, m.op, m.stream
		return r, true
	}
	if publisher == "anthropic" && (method == "rawPredict" || method == "streamRawPredict") {
		r.api, r.op, r.stream = APIAnthropicMessages, semconv.GenAIOperationChat, method == "streamRawPredict"
		return r, true
	}
	return routed{}, false
}

// bedrockRoute matches /model/{modelId}/{converse,converse-stream,invoke,invoke-with-response-stream}.
func bedrockRoute(path string, body []byte) (routed, bool) {
	rest, ok := strings.CutPrefix(path, "/model/")
	if !ok {
		return routed{}, false
	}
	id, action, ok := strings.Cut(rest, "/")
	if !ok || id == "" || strings.Contains(action, "/") {
		return routed{}, false
	}
	r := routed{model: cleanField(unescape(id), maxModelLen)}
	switch action {
	case "converse", "converse-stream":
		r.api, r.op, r.stream = APIBedrockConverse, semconv.GenAIOperationChat, action == "converse-stream"
	case "invoke", "invoke-with-response-stream":
		r.api, r.stream = APIBedrockInvoke, action == "invoke-with-response-stream"
		r.op = bedrockInvokeOperation(r.model, body)
	default:
		return routed{}, false
	}
	return r, true
}

// bedrockInvokeOperation infers the operation of an InvokeModel call, whose
// body is the model family's own format: embedding model ids and bodies
// with "texts" are embeddings; "messages" is chat (Anthropic, Llama 3.2+,
// Nova, Mistral chat); "prompt" or "inputText" is text_completion (Llama,
// Mistral, Titan Text). Chat when nothing tells.
func bedrockInvokeOperation(model string, body []byte) string {
	if strings.Contains(strings.ToLower(model), "embed") {
		return semconv.GenAIOperationEmbeddings
	}
	keys := topLevelKeys(body, "messages", "prompt", "inputText", "texts")
	switch {
	case keys&1 != 0:
		return semconv.GenAIOperationChat
	case keys&8 != 0:
		return semconv.GenAIOperationEmbeddings
	case keys&6 != 0:
		return semconv.GenAIOperationTextCompletion
	}
	return semconv.GenAIOperationChat
}

// ollamaRoute matches Ollama's native API.
func ollamaRoute(path string) (routed, bool) {
	switch path {
	case "/api/chat":
		return routed{api: APIOllamaChat, op: semconv.GenAIOperationChat}, true
	case "/api/generate":
		return routed{api: APIOllamaGenerate, op: semconv.GenAIOperationTextCompletion}, true
	case "/api/embed", "/api/embeddings":
		return routed{api: APIOllamaEmbed, op: semconv.GenAIOperationEmbeddings}, true
	}
	return routed{}, false
}

// splitHost normalises a Host header value: lower case, without a trailing
// dot and, for IPv6, without brackets. port is 0 when absent. ok is false
// for a value that is too long, is not ASCII (names arrive in punycode) or
// has a malformed port.
func splitHost(h string) (host string, port int, ok bool) {
	if len(h) > maxHostLen {
		return "", 0, false
	}
	var portStr string
	switch {
	case strings.HasPrefix(h, "["):
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return "", 0, false
		}
		host, rest := h[1:end], h[end+1:]
		if rest != "" {
			if rest[0] != ':' {
				return "", 0, false
			}
			portStr = rest[1:]
		}
		h = host
	case strings.Count(h, ":") == 1:
		h, portStr, _ = strings.Cut(h, ":")
	}
	if portStr != "" {
		p, err := strconv.Atoi(portStr)
		if err != nil || p < 1 || p > 65535 || portStr[0] == '+' || portStr[0] == '-' {
			return "", 0, false
		}
		port = p
	}
	h = strings.TrimSuffix(h, ".")
	for i := 0; i < len(h); i++ {
		if c := h[i]; c <= ' ' || c >= 0x7f || c == '/' || c == '?' || c == '#' || c == '@' {
			return "", 0, false
		}
	}
	return strings.ToLower(h), port, true
}

// queryParam returns the unescaped value of the first name=value pair.
func queryParam(query, name string) string {
	for query != "" {
		var pair string
		pair, query, _ = strings.Cut(query, "&")
		k, v, _ := strings.Cut(pair, "=")
		if k == name {
			if u, err := url.QueryUnescape(v); err == nil {
				return u
			}
			return v
		}
	}
	return ""
}

func unescape(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// cleanField returns s when it is short and printable, else "".
func cleanField(s string, max int) string {
	if len(s) > max || !printable(s) {
		return ""
	}
	return s
}

func printable(s string) bool {
	for _, r := range s {
		if r < ' ' || r == 0x7f || r == '\uFFFD' {
			return false
		}
	}
	return true
}

// topLevelKeys scans the JSON object at the start of b (its first
// maxBodyScan bytes, which may be cut anywhere) and returns a bit set:
// bit i is set when keys[i] is a member name at the top level. Names with
// escapes are not matched. It stops at the end of the object or the first
// byte it cannot follow. Linear in the bytes read; no allocation.
func topLevelKeys(b []byte, keys ...string) (found uint32) {
	if len(b) > maxBodyScan {
		b = b[:maxBodyScan]
	}
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	if i >= len(b) || b[i] != '{' {
		return 0
	}
	i++
	depth, expectKey := 1, true
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(b) {
				return found
			}
			if depth == 1 && expectKey {
				name := b[i+1 : j]
				for k, key := range keys {
					if k < 32 && string(name) == key {
						found |= 1 << k
					}
				}
				expectKey = false
			}
			i = j
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return found
			}
		case ',':
			if depth == 1 {
				expectKey = true
			}
		}
		i++
	}
	return found
}
