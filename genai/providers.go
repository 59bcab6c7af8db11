package genai

// providers is every LLM API provider that Detect, Parse and
// ExtractContent know. Each is one file (openai.go, anthropic.go,
// gemini.go, ollama.go, bedrock.go) that declares its APIs, its row of
// this table, its hosts and routes, its parser and its content reader.
//
// The order is the one in which the providers' routes are tried on a
// mapped host and their guesses on a host Detect does not know. The
// OpenAI family comes last: its endpoints under any prefix are the
// widest shapes, and another provider's path that also has one of them
// (Ollama's /api/embeddings) is that provider's.
var providers = []provider{
	ollamaProvider,
	geminiProvider,
	bedrockProvider,
	anthropicProvider,
	openAIProvider,
}

// provider is one LLM API provider as Detect, Parse and ExtractContent
// see it.
type provider struct {
	// name is the gen_ai.provider.name of the provider's own service:
	// the provider a mapped port names.
	name string
	// apis are the APIs the provider's routes return, with their
	// readers. Every API belongs to one provider.
	apis []apiReader
	// hosts are the host names that serve the provider's APIs, each with
	// its provider name and the paths it serves.
	hosts map[string]knownHost
	// hostSuffixes are suffixes of the provider's host names: a longer
	// name that ends in one is a host of that kind.
	hostSuffixes []hostSuffix
	// matchHost recognises the provider's hosts that neither their name
	// nor a suffix tells (Bedrock's, whose region stands inside the
	// name), returning nil for another host; nil when it has none.
	matchHost hostMatcher
	// port, when not 0, makes a host Detect does not know a mapped host
	// of this provider when the request goes to that port (Ollama's
	// 11434).
	port int
	// route matches every path shape of the provider's APIs, under any
	// prefix: what a mapped host serves.
	route routeFunc
	// guesses are the shapes that, on a host Detect does not know, the
	// path (and a header) make unmistakable, each with the provider it
	// names; tried in order.
	guesses []guess
}

// apiReader is what reads one API.
type apiReader struct {
	api API
	// parser returns a parser of the API's exchanges; nil when there is
	// none yet (Parse returns ErrUnsupportedAPI).
	parser func() responseParser
	// content reads the exchange's text into r; nil when the API carries
	// none (embeddings) or its bodies are not read (Bedrock InvokeModel).
	content func(x *Exchange, c *Call, r *contentReader)
}

// knownHost is a host Detect knows: the provider behind it and the
// paths it serves.
type knownHost struct {
	provider string
	route    routeFunc
}

// hostMatcher returns the host that a host name is, and the region the
// name carries; nil when it is none of the matcher's.
type hostMatcher func(host string) (h *knownHost, region string)

// hostSuffix is the suffix of the names of one kind of host.
type hostSuffix struct {
	suffix string
	host   *knownHost
	// regionFirst: the name before the suffix is the region (Vertex
	// AI's {location}-aiplatform.googleapis.com).
	regionFirst bool
}

// guess is a path shape that names its provider on any host.
type guess struct {
	provider string
	// signal, when set, must hold of the request's header block too (the
	// API's version header, the kind of credential it carries: see
	// redactCredential). A guess with a signal is tried before those the
	// path alone makes.
	signal func(h Header) bool
	route  routeFunc
}

// hasField returns a signal: the request has a field named key
// (canonical form), whatever its value.
func hasField(key string) func(Header) bool {
	return func(h Header) bool { _, ok := h[key]; return ok }
}

// routeFunc matches the path of an exchange (Detect's: no query, no
// fragment, no trailing slash) to an API; what it found counts only when
// ok.
type routeFunc func(path string, x *Exchange) (routed, bool)

// either returns a route that tries first, then second.
func either(first, second routeFunc) routeFunc {
	return func(path string, x *Exchange) (routed, bool) {
		if r, ok := first(path, x); ok {
			return r, true
		}
		return second(path, x)
	}
}

// The table, as Parse, ExtractContent and Detect look it up: built once,
// by init.
var (
	apiReaders     []apiReader                   // every provider's APIs
	knownHosts     = make(map[string]*knownHost) // every provider's hosts by name
	hostSuffixes   []hostSuffix
	hostMatchers   []hostMatcher
	mappedRoutes   []routeFunc
	unknownGuesses []guess
)

// init builds the lookups of the table.
func init() {
	for _, p := range providers {
		apiReaders = append(apiReaders, p.apis...)
		for name, h := range p.hosts {
			knownHosts[name] = &h
		}
		hostSuffixes = append(hostSuffixes, p.hostSuffixes...)
		if p.matchHost != nil {
			hostMatchers = append(hostMatchers, p.matchHost)
		}
		mappedRoutes = append(mappedRoutes, p.route)
		unknownGuesses = append(unknownGuesses, p.guesses...)
	}
}

// readerOf returns the readers of api; none for an API no provider has.
// Scanning the dozen APIs costs less than hashing api for a map.
func readerOf(api API) apiReader {
	for _, a := range apiReaders {
		if a.api == api {
			return a
		}
	}
	return apiReader{}
}

// hostOf says whose host is and which paths it serves, and the region
// its name carries. A HostMap entry, and a host Detect does not know on
// a provider's port, are mapped: they serve every provider's shapes
// (routeMapped), and the mapped provider is theirs whatever the path. A
// host Detect knows by its name, a suffix or a matchHost serves the
// paths of its route; any other host, which has none, the guesses
// (routeUnknown).
func hostOf(host string, port int, hosts HostMap) (provider, region string, route routeFunc, mapped bool) {
	h := knownHosts[host]
	if h == nil {
		h, region = hostByShape(host, hostSuffixes, hostMatchers)
	}
	if p, ok := hosts.lookup(host, port); ok {
		return p, region, nil, true
	}
	if h != nil {
		return h.provider, region, h.route, false
	}
	for i := range providers {
		if p := &providers[i]; p.port != 0 && p.port == port {
			return p.name, "", nil, true
		}
	}
	return "", "", nil, false
}

// hostByShape finds the host that one of suffixes or of matchers
// recognises, and the region its name carries; nil when none does.
func hostByShape(host string, suffixes []hostSuffix, matchers []hostMatcher) (*knownHost, string) {
	for i := range suffixes {
		if s := &suffixes[i]; hasLabelSuffix(host, s.suffix) {
			if s.regionFirst {
				return s.host, host[:len(host)-len(s.suffix)]
			}
			return s.host, ""
		}
	}
	for _, match := range matchers {
		if h, region := match(host); h != nil {
			return h, region
		}
	}
	return nil, ""
}

// routeMapped matches a path of a mapped host: every provider's shapes,
// in the table's order.
func routeMapped(path string, x *Exchange) (routed, bool) {
	for _, route := range mappedRoutes {
		if r, ok := route(path, x); ok {
			return r, true
		}
	}
	return routed{}, false
}

// routeUnknown matches a path of a host Detect does not know: the
// providers' guesses, in the table's order, naming their provider.
func routeUnknown(path string, x *Exchange) (routed, bool) {
	for _, signalled := range []bool{true, false} {
		for i := range unknownGuesses {
			g := &unknownGuesses[i]
			if (g.signal != nil) != signalled || signalled && !g.signal(x.RequestHeader) {
				continue
			}
			if r, ok := g.route(path, x); ok {
				r.provider = g.provider
				return r, true
			}
		}
	}
	return routed{}, false
}
