package genai

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// declaredAPIs returns the exported API constants that the package's
// source files declare.
func declaredAPIs(t *testing.T) []API {
	t.Helper()
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var apis []API
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			decl, ok := d.(*ast.GenDecl)
			if !ok || decl.Tok != token.CONST {
				continue
			}
			for _, spec := range decl.Specs {
				vs := spec.(*ast.ValueSpec)
				if typ, ok := vs.Type.(*ast.Ident); !ok || typ.Name != "API" {
					continue
				}
				for i, n := range vs.Names {
					if !n.IsExported() {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					require.True(t, ok, "%s: %s is not a string literal", name, n.Name)
					v, err := strconv.Unquote(lit.Value)
					require.NoError(t, err, "%s: %s", name, n.Name)
					apis = append(apis, API(v))
				}
			}
		}
	}
	return apis
}

// tableProblems lists what is wrong with a provider table for the APIs
// apis: an API that no row or two rows serve, or that no API constant
// declares; a row without a name, a route, or any parser; a host in two
// rows, a host that a row knows by its shape too, a host or a host
// suffix without a provider or a route; a guess without one; two rows
// on one port.
func tableProblems(rows []provider, apis []API) []string {
	var problems []string
	served := make(map[API][]string)
	hostRow := make(map[string]string)
	portRow := make(map[int]string)
	for _, p := range rows {
		if p.name == "" {
			problems = append(problems, "a row has no name")
		}
		if p.route == nil {
			problems = append(problems, p.name+": no route")
		}
		parsers := 0
		for _, a := range p.apis {
			served[a.api] = append(served[a.api], p.name)
			if a.parser != nil {
				parsers++
			}
		}
		if parsers == 0 {
			problems = append(problems, p.name+": no parser")
		}
		for name, h := range p.hosts {
			if prev, dup := hostRow[name]; dup {
				problems = append(problems, fmt.Sprintf("host %s: in %s and %s", name, prev, p.name))
			}
			hostRow[name] = p.name
			if h.provider == "" || h.route == nil {
				problems = append(problems, fmt.Sprintf("host %s (%s): no provider or no route", name, p.name))
			}
			for _, q := range rows {
				var matchers []hostMatcher
				if q.matchHost != nil {
					matchers = append(matchers, q.matchHost)
				}
				if h, _ := hostByShape(name, q.hostSuffixes, matchers); h != nil {
					problems = append(problems, fmt.Sprintf("host %s (%s): %s knows it by its shape too", name, p.name, q.name))
				}
			}
		}
		for _, s := range p.hostSuffixes {
			if s.host == nil || s.host.provider == "" || s.host.route == nil {
				problems = append(problems, fmt.Sprintf("host suffix %s (%s): no provider or no route", s.suffix, p.name))
			}
		}
		for _, g := range p.guesses {
			if g.provider == "" || g.route == nil {
				problems = append(problems, p.name+": a guess without a provider or a route")
			}
		}
		if p.port != 0 {
			if prev, dup := portRow[p.port]; dup {
				problems = append(problems, fmt.Sprintf("port %d: %s and %s", p.port, prev, p.name))
			}
			portRow[p.port] = p.name
		}
	}
	declared := make(map[API]bool)
	for _, api := range apis {
		declared[api] = true
		if n := len(served[api]); n != 1 {
			problems = append(problems, fmt.Sprintf("%s: served by %d rows %v", api, n, served[api]))
		}
	}
	for api, by := range served {
		if !declared[api] {
			problems = append(problems, fmt.Sprintf("%s (%v): no API constant", api, by))
		}
	}
	return problems
}

// TestProviderTable: every API constant is served by exactly one row,
// every row can route and parse, every known host belongs to one row,
// and the lookups built from the table hold all of it.
func TestProviderTable(t *testing.T) {
	apis := declaredAPIs(t)
	require.NotEmpty(t, apis)
	assert.Empty(t, tableProblems(providers, apis))

	assert.Equal(t, len(apis), len(apiReaders), "APIs in apiReaders")
	for _, api := range apis {
		assert.Equal(t, api, readerOf(api).api, "readerOf(%s)", api)
	}
	hosts := 0
	for _, p := range providers {
		for name, h := range p.hosts {
			hosts++
			provider, _, route, mapped := hostOf(name, 0, nil)
			assert.False(t, mapped, name)
			assert.NotNil(t, route, name)
			assert.Equal(t, h.provider, provider, name)
		}
	}
	assert.Equal(t, hosts, len(knownHosts), "hosts in knownHosts")
}

// TestProviderTableProblems: tableProblems finds each kind of fault.
func TestProviderTableProblems(t *testing.T) {
	apis := declaredAPIs(t)
	noEmbeddings := openAIProvider
	noEmbeddings.apis = noEmbeddings.apis[:len(noEmbeddings.apis)-1]
	noRoute := ollamaProvider
	noRoute.route = nil
	noParser := anthropicProvider
	noParser.apis = []apiReader{{api: APIAnthropicMessages}}
	azureHostByName := bedrockProvider
	azureHostByName.hosts = map[string]knownHost{"res.openai.azure.com": {provider: "p", route: bedrockRoute}}
	noSuffixRoute := geminiProvider
	noSuffixRoute.hostSuffixes = []hostSuffix{{suffix: "-aiplatform.googleapis.com", host: &knownHost{provider: "p"}}}
	undeclared := geminiProvider
	undeclared.apis = append([]apiReader{{api: "gemini.count_tokens", parser: newGeminiParser}}, undeclared.apis...)

	for _, tt := range []struct {
		name string
		rows []provider
		want string
	}{
		{"an API without a row", []provider{ollamaProvider, geminiProvider, bedrockProvider, anthropicProvider, noEmbeddings}, "openai.embeddings: served by 0 rows []"},
		{"an API in two rows", append(providers[:len(providers):len(providers)], anthropicProvider), "anthropic.messages: served by 2 rows [anthropic anthropic]"},
		{"a host in two rows", append(providers[:len(providers):len(providers)], openAIProvider), "host api.openai.com: in openai and openai"},
		{"a row without a route", []provider{noRoute, geminiProvider, bedrockProvider, anthropicProvider, openAIProvider}, "ollama: no route"},
		{"a row without a parser", []provider{ollamaProvider, geminiProvider, bedrockProvider, noParser, openAIProvider}, "anthropic: no parser"},
		{"a host another row matches", []provider{ollamaProvider, geminiProvider, azureHostByName, anthropicProvider, openAIProvider}, "host res.openai.azure.com (aws.bedrock): openai knows it by its shape too"},
		{"a host suffix without a route", []provider{ollamaProvider, noSuffixRoute, bedrockProvider, anthropicProvider, openAIProvider}, "host suffix -aiplatform.googleapis.com (gcp.gemini): no provider or no route"},
		{"an API no constant declares", []provider{ollamaProvider, undeclared, bedrockProvider, anthropicProvider, openAIProvider}, "gemini.count_tokens ([gcp.gemini]): no API constant"},
		{"two rows on one port", append(providers[:len(providers):len(providers)], provider{name: "other", port: ollamaPort}), "port 11434: ollama and other"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Contains(t, tableProblems(tt.rows, apis), tt.want)
		})
	}
}
