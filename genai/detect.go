package genai

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// API is the wire format of an exchange's bodies: which parser reads it.
// Several providers share one API (vLLM, Groq and Azure OpenAI all speak
// APIOpenAIChatCompletions), so the provider does not say it.
type API string

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

// lookup returns the provider of host:port, else of host. host is
// splitHost's, at most maxHostLen long.
func (m HostMap) lookup(host string, port int) (string, bool) {
	if len(m) == 0 || host == "" {
		return "", false
	}
	if port != 0 {
		// The key net.JoinHostPort writes, on the stack.
		var buf [maxHostLen + len("[]:65535")]byte
		key := buf[:0]
		if strings.IndexByte(host, ':') >= 0 {
			key = append(append(append(key, '['), host...), ']')
		} else {
			key = append(key, host...)
		}
		key = strconv.AppendInt(append(key, ':'), int64(port), 10)
		if p, ok := m[string(key)]; ok {
			return p, true
		}
	}
	p, ok := m[host]
	return p, ok
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

	provider, region, route, mapped := hostOf(host, port, hosts)
	var r routed
	switch {
	case mapped:
		r, ok = routeMapped(path, x)
	case route != nil:
		r, ok = route(path, x)
	default:
		r, ok = routeUnknown(path, x)
	}
	if !ok {
		return Endpoint{}, false
	}
	if r.provider != "" && !mapped {
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

// hasLabelSuffix reports whether host is a longer name than suffix that
// ends in it.
func hasLabelSuffix(host, suffix string) bool {
	return len(host) > len(suffix) && strings.HasSuffix(host, suffix)
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

// unescape returns s path-unescaped, or s when it does not unescape.
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

// printable reports whether s has neither a control character nor
// invalid UTF-8 (or U+FFFD).
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
