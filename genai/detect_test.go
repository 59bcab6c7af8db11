package genai

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/semconv"
)

func TestDetect(t *testing.T) {
	hosts, err := NewHostMap(map[string]string{
		"vllm.internal:8000": "vllm",
		"LiteLLM.corp":       "litellm",
		"[fd00::7]:9000":     "tgi",
		"bedrock-proxy:443":  semconv.GenAIProviderAWSBedrock,
	})
	require.NoError(t, err)
	type hdr = map[string][]string
	tests := []struct {
		name   string
		method string
		host   string
		path   string
		header hdr
		body   string
		want   Endpoint
		ok     bool
	}{
		// OpenAI.
		{name: "openai chat", host: "api.openai.com", path: "/v1/chat/completions",
			want: Endpoint{Provider: "openai", Operation: "chat", API: APIOpenAIChatCompletions, ServerAddress: "api.openai.com"}, ok: true},
		{name: "openai chat with port and trailing slash", host: "API.OpenAI.com.:443", path: "/v1/chat/completions/",
			want: Endpoint{Provider: "openai", Operation: "chat", API: APIOpenAIChatCompletions, ServerAddress: "api.openai.com", ServerPort: 443}, ok: true},
		{name: "openai completions", host: "api.openai.com", path: "/v1/completions",
			want: Endpoint{Provider: "openai", Operation: "text_completion", API: APIOpenAICompletions, ServerAddress: "api.openai.com"}, ok: true},
		{name: "openai responses", host: "api.openai.com", path: "/v1/responses",
			want: Endpoint{Provider: "openai", Operation: "chat", API: APIOpenAIResponses, ServerAddress: "api.openai.com"}, ok: true},
		{name: "openai embeddings", host: "api.openai.com", path: "/v1/embeddings",
			want: Endpoint{Provider: "openai", Operation: "embeddings", API: APIOpenAIEmbeddings, ServerAddress: "api.openai.com"}, ok: true},
		{name: "openai GET is not a call", method: "GET", host: "api.openai.com", path: "/v1/responses"},
		{name: "openai models list", host: "api.openai.com", path: "/v1/models"},
		{name: "openai responses by id", host: "api.openai.com", path: "/v1/responses/resp_123"},
		{name: "openai odd prefix", host: "api.openai.com", path: "/x/v1/chat/completions"},
		{name: "absolute-form target", host: "", path: "https://api.openai.com/v1/chat/completions",
			want: Endpoint{Provider: "openai", Operation: "chat", API: APIOpenAIChatCompletions, ServerAddress: "api.openai.com"}, ok: true},

		// Azure OpenAI.
		{name: "azure deployment", host: "myres.openai.azure.com", path: "/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21",
			want: Endpoint{Provider: "azure.ai.openai", Operation: "chat", API: APIOpenAIChatCompletions, Deployment: "gpt4o-prod", APIVersion: "2024-10-21", ServerAddress: "myres.openai.azure.com"}, ok: true},
		{name: "azure deployment embeddings, cognitiveservices", host: "myres.cognitiveservices.azure.com", path: "/openai/deployments/emb%20small/embeddings?foo=1&api-version=2024-06-01",
			want: Endpoint{Provider: "azure.ai.openai", Operation: "embeddings", API: APIOpenAIEmbeddings, Deployment: "emb small", APIVersion: "2024-06-01", ServerAddress: "myres.cognitiveservices.azure.com"}, ok: true},
		{name: "azure v1 path", host: "myres.openai.azure.com", path: "/openai/v1/responses?api-version=preview",
			want: Endpoint{Provider: "azure.ai.openai", Operation: "chat", API: APIOpenAIResponses, APIVersion: "preview", ServerAddress: "myres.openai.azure.com"}, ok: true},
		{name: "azure v1 chat no version", host: "myres.openai.azure.com", path: "/openai/v1/chat/completions",
			want: Endpoint{Provider: "azure.ai.openai", Operation: "chat", API: APIOpenAIChatCompletions, ServerAddress: "myres.openai.azure.com"}, ok: true},
		{name: "azure foundry openai path", host: "proj.services.ai.azure.com", path: "/openai/deployments/d/completions?api-version=2024-02-01",
			want: Endpoint{Provider: "azure.ai.openai", Operation: "text_completion", API: APIOpenAICompletions, Deployment: "d", APIVersion: "2024-02-01", ServerAddress: "proj.services.ai.azure.com"}, ok: true},
		{name: "azure ai inference", host: "proj.services.ai.azure.com", path: "/models/chat/completions?api-version=2024-05-01-preview",
			want: Endpoint{Provider: "azure.ai.inference", Operation: "chat", API: APIOpenAIChatCompletions, APIVersion: "2024-05-01-preview", ServerAddress: "proj.services.ai.azure.com"}, ok: true},
		{name: "azure serverless inference", host: "llama-x.eastus2.models.ai.azure.com", path: "/v1/chat/completions",
			want: Endpoint{Provider: "azure.ai.inference", Operation: "chat", API: APIOpenAIChatCompletions, ServerAddress: "llama-x.eastus2.models.ai.azure.com"}, ok: true},
		{name: "azure deployment without endpoint", host: "myres.openai.azure.com", path: "/openai/deployments/d"},
		{name: "azure suffix alone is no resource host", host: "openai.azure.com", path: "/openai/v1/chat/completions",
			want: Endpoint{Provider: "openai_compatible", Operation: "chat", API: APIOpenAIChatCompletions, ServerAddress: "openai.azure.com"}, ok: true},
		{name: "azure via unknown gateway", host: "apim.corp.example", path: "/openai/deployments/gpt/chat/completions?api-version=2024-10-21",
			want: Endpoint{Provider: "azure.ai.openai", Operation: "chat", API: APIOpenAIChatCompletions, Deployment: "gpt", APIVersion: "2024-10-21", ServerAddress: "apim.corp.example"}, ok: true},

		// Anthropic.
		{name: "anthropic messages", host: "api.anthropic.com", path: "/v1/messages", header: hdr{"Anthropic-Version": {"2023-06-01"}},
			want: Endpoint{Provider: "anthropic", Operation: "chat", API: APIAnthropicMessages, APIVersion: "2023-06-01", ServerAddress: "api.anthropic.com"}, ok: true},
		{name: "anthropic count tokens", host: "api.anthropic.com", path: "/v1/messages/count_tokens"},
		{name: "anthropic batches", host: "api.anthropic.com", path: "/v1/messages/batches"},
		{name: "anthropic openai compat", host: "api.anthropic.com", path: "/v1/chat/completions",
			want: Endpoint{Provider: "anthropic", Operation: "chat", API: APIOpenAIChatCompletions, ServerAddress: "api.anthropic.com"}, ok: true},
		{name: "anthropic via unknown proxy with header", host: "proxy.local:8080", path: "/anthropic/v1/messages", header: hdr{"Anthropic-Version": {"2023-06-01"}},
			want: Endpoint{Provider: "anthropic", Operation: "chat", API: APIAnthropicMessages, APIVersion: "2023-06-01", ServerAddress: "proxy.local", ServerPort: 8080}, ok: true},
		{name: "messages on unknown host without header", host: "proxy.local:8080", path: "/v1/messages"},

		// Gemini API.
		{name: "gemini generate", host: "generativelanguage.googleapis.com", path: "/v1beta/models/gemini-2.0-flash:generateContent",
			want: Endpoint{Provider: "gcp.gemini", Operation: "generate_content", API: APIGeminiGenerateContent, Model: "gemini-2.0-flash", APIVersion: "v1beta", ServerAddress: "generativelanguage.googleapis.com"}, ok: true},
		{name: "gemini stream sse", host: "generativelanguage.googleapis.com", path: "/v1beta/models/gemini-1.5-pro:streamGenerateContent?alt=sse",
			want: Endpoint{Provider: "gcp.gemini", Operation: "generate_content", API: APIGeminiGenerateContent, Model: "gemini-1.5-pro", Stream: true, APIVersion: "v1beta", ServerAddress: "generativelanguage.googleapis.com"}, ok: true},
		{name: "gemini escaped colon", host: "generativelanguage.googleapis.com", path: "/v1/models/gemini-pro%3AgenerateContent",
			want: Endpoint{Provider: "gcp.gemini", Operation: "generate_content", API: APIGeminiGenerateContent, Model: "gemini-pro", APIVersion: "v1", ServerAddress: "generativelanguage.googleapis.com"}, ok: true},
		{name: "gemini embed", host: "generativelanguage.googleapis.com", path: "/v1beta/models/text-embedding-004:batchEmbedContents",
			want: Endpoint{Provider: "gcp.gemini", Operation: "embeddings", API: APIGeminiEmbedContent, Model: "text-embedding-004", APIVersion: "v1beta", ServerAddress: "generativelanguage.googleapis.com"}, ok: true},
		{name: "gemini count tokens", host: "generativelanguage.googleapis.com", path: "/v1beta/models/gemini-pro:countTokens"},
		{name: "gemini openai compat", host: "generativelanguage.googleapis.com", path: "/v1beta/openai/chat/completions",
			want: Endpoint{Provider: "gcp.gemini", Operation: "chat", API: APIOpenAIChatCompletions, ServerAddress: "generativelanguage.googleapis.com"}, ok: true},
		{name: "gemini shape on unknown host", host: "gw.example", path: "/v1beta/models/gemini-pro:generateContent",
			want: Endpoint{Provider: "gcp.gen_ai", Operation: "generate_content", API: APIGeminiGenerateContent, Model: "gemini-pro", APIVersion: "v1beta", ServerAddress: "gw.example"}, ok: true},

		// Vertex AI.
		{name: "vertex gemini", host: "us-central1-aiplatform.googleapis.com", path: "/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-1.5-flash-002:streamGenerateContent?alt=sse",
			want: Endpoint{Provider: "gcp.vertex_ai", Operation: "generate_content", API: APIGeminiGenerateContent, Model: "gemini-1.5-flash-002", Stream: true, APIVersion: "v1", Region: "us-central1", ServerAddress: "us-central1-aiplatform.googleapis.com"}, ok: true},
		{name: "vertex global", host: "aiplatform.googleapis.com", path: "/v1beta1/projects/p1/locations/global/publishers/google/models/gemini-2.5-pro:generateContent",
			want: Endpoint{Provider: "gcp.vertex_ai", Operation: "generate_content", API: APIGeminiGenerateContent, Model: "gemini-2.5-pro", APIVersion: "v1beta1", Region: "global", ServerAddress: "aiplatform.googleapis.com"}, ok: true},
		{name: "vertex anthropic", host: "europe-west1-aiplatform.googleapis.com", path: "/v1/projects/p/locations/europe-west1/publishers/anthropic/models/claude-3-5-sonnet-v2@20241022:streamRawPredict",
			want: Endpoint{Provider: "gcp.vertex_ai", Operation: "chat", API: APIAnthropicMessages, Model: "claude-3-5-sonnet-v2@20241022", Stream: true, APIVersion: "v1", Region: "europe-west1", ServerAddress: "europe-west1-aiplatform.googleapis.com"}, ok: true},
		{name: "vertex tuned endpoint", host: "us-east1-aiplatform.googleapis.com", path: "/v1/projects/p/locations/us-east1/endpoints/123:generateContent",
			want: Endpoint{Provider: "gcp.vertex_ai", Operation: "generate_content", API: APIGeminiGenerateContent, APIVersion: "v1", Region: "us-east1", ServerAddress: "us-east1-aiplatform.googleapis.com"}, ok: true},
		{name: "vertex openai compat", host: "us-east1-aiplatform.googleapis.com", path: "/v1/projects/p/locations/us-east1/endpoints/openapi/chat/completions",
			want: Endpoint{Provider: "gcp.vertex_ai", Operation: "chat", API: APIOpenAIChatCompletions, Region: "us-east1", ServerAddress: "us-east1-aiplatform.googleapis.com"}, ok: true},
		{name: "vertex predict not known", host: "us-east1-aiplatform.googleapis.com", path: "/v1/projects/p/locations/us-east1/publishers/google/models/text-embedding-005:predict"},
		{name: "vertex shape on private endpoint", host: "10.1.2.3", path: "/v1/projects/p/locations/asia-east1/publishers/google/models/gemini-pro:generateContent",
			want: Endpoint{Provider: "gcp.vertex_ai", Operation: "generate_content", API: APIGeminiGenerateContent, Model: "gemini-pro", APIVersion: "v1", Region: "asia-east1", ServerAddress: "10.1.2.3"}, ok: true},

		// Bedrock.
		{name: "bedrock converse", host: "bedrock-runtime.us-east-1.amazonaws.com", path: "/model/anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse",
			want: Endpoint{Provider: "aws.bedrock", Operation: "chat", API: APIBedrockConverse, Model: "anthropic.claude-3-5-sonnet-20241022-v2:0", Region: "us-east-1", ServerAddress: "bedrock-runtime.us-east-1.amazonaws.com"}, ok: true},
		{name: "bedrock converse stream, inference profile arn", host: "bedrock-runtime.eu-west-3.amazonaws.com", path: "/model/arn%3Aaws%3Abedrock%3Aeu-west-3%3A123456789012%3Ainference-profile%2Feu.amazon.nova-pro-v1%3A0/converse-stream",
			want: Endpoint{Provider: "aws.bedrock", Operation: "chat", API: APIBedrockConverse, Model: "arn:aws:bedrock:eu-west-3:123456789012:inference-profile/eu.amazon.nova-pro-v1:0", Stream: true, Region: "eu-west-3", ServerAddress: "bedrock-runtime.eu-west-3.amazonaws.com"}, ok: true},
		{name: "bedrock invoke messages", host: "bedrock-runtime.us-west-2.amazonaws.com", path: "/model/anthropic.claude-3-haiku-20240307-v1:0/invoke", body: `{"anthropic_version":"bedrock-2023-05-31","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
			want: Endpoint{Provider: "aws.bedrock", Operation: "chat", API: APIBedrockInvoke, Model: "anthropic.claude-3-haiku-20240307-v1:0", Region: "us-west-2", ServerAddress: "bedrock-runtime.us-west-2.amazonaws.com"}, ok: true},
		{name: "bedrock invoke prompt stream", host: "bedrock-runtime-fips.us-east-1.amazonaws.com", path: "/model/meta.llama3-70b-instruct-v1:0/invoke-with-response-stream", body: `{"prompt":"{\"messages\":1}","max_gen_len":5}`,
			want: Endpoint{Provider: "aws.bedrock", Operation: "text_completion", API: APIBedrockInvoke, Model: "meta.llama3-70b-instruct-v1:0", Stream: true, Region: "us-east-1", ServerAddress: "bedrock-runtime-fips.us-east-1.amazonaws.com"}, ok: true},
		{name: "bedrock invoke embed model", host: "bedrock-runtime.us-east-1.amazonaws.com", path: "/model/amazon.titan-embed-text-v2:0/invoke", body: `{"inputText":"x"}`,
			want: Endpoint{Provider: "aws.bedrock", Operation: "embeddings", API: APIBedrockInvoke, Model: "amazon.titan-embed-text-v2:0", Region: "us-east-1", ServerAddress: "bedrock-runtime.us-east-1.amazonaws.com"}, ok: true},
		{name: "bedrock invoke nested messages key is not top level", host: "bedrock-runtime.us-east-1.amazonaws.com", path: "/model/m/invoke", body: `{"x":{"messages":[]},"inputText":"a"}`,
			want: Endpoint{Provider: "aws.bedrock", Operation: "text_completion", API: APIBedrockInvoke, Model: "m", Region: "us-east-1", ServerAddress: "bedrock-runtime.us-east-1.amazonaws.com"}, ok: true},
		{name: "bedrock vpc endpoint", host: "vpce-0abc-xyz.bedrock-runtime.ap-south-1.vpce.amazonaws.com", path: "/model/m/converse",
			want: Endpoint{Provider: "aws.bedrock", Operation: "chat", API: APIBedrockConverse, Model: "m", Region: "ap-south-1", ServerAddress: "vpce-0abc-xyz.bedrock-runtime.ap-south-1.vpce.amazonaws.com"}, ok: true},
		{name: "bedrock unknown action", host: "bedrock-runtime.us-east-1.amazonaws.com", path: "/model/m/apply-guardrail"},
		{name: "bedrock control plane", host: "bedrock.us-east-1.amazonaws.com", path: "/model/m/converse"},
		{name: "bedrock shape on unknown host needs X-Amz-Date", host: "gw.example", path: "/model/m/converse"},
		{name: "bedrock shape on unknown host", host: "gw.example", path: "/model/m/converse", header: hdr{"X-Amz-Date": {"20250101T000000Z"}},
			want: Endpoint{Provider: "aws.bedrock", Operation: "chat", API: APIBedrockConverse, Model: "m", ServerAddress: "gw.example"}, ok: true},
		{name: "bedrock on mapped host", host: "bedrock-proxy:443", path: "/model/m/invoke",
			want: Endpoint{Provider: "aws.bedrock", Operation: "chat", API: APIBedrockInvoke, Model: "m", ServerAddress: "bedrock-proxy", ServerPort: 443}, ok: true},

		// Ollama.
		{name: "ollama chat", host: "localhost:11434", path: "/api/chat",
			want: Endpoint{Provider: "ollama", Operation: "chat", API: APIOllamaChat, ServerAddress: "localhost", ServerPort: 11434}, ok: true},
		{name: "ollama generate", host: "127.0.0.1:11434", path: "/api/generate",
			want: Endpoint{Provider: "ollama", Operation: "text_completion", API: APIOllamaGenerate, ServerAddress: "127.0.0.1", ServerPort: 11434}, ok: true},
		{name: "ollama embed", host: "gpu-box:11434", path: "/api/embed",
			want: Endpoint{Provider: "ollama", Operation: "embeddings", API: APIOllamaEmbed, ServerAddress: "gpu-box", ServerPort: 11434}, ok: true},
		{name: "ollama openai compat", host: "localhost:11434", path: "/v1/chat/completions",
			want: Endpoint{Provider: "ollama", Operation: "chat", API: APIOpenAIChatCompletions, ServerAddress: "localhost", ServerPort: 11434}, ok: true},
		{name: "ollama path on other port", host: "localhost:8080", path: "/api/chat"},
		{name: "ollama tags", host: "localhost:11434", path: "/api/tags"},

		// OpenAI-compatible SaaS.
		{name: "groq", host: "api.groq.com", path: "/openai/v1/chat/completions",
			want: Endpoint{Provider: "groq", Operation: "chat", API: APIOpenAIChatCompletions, ServerAddress: "api.groq.com"}, ok: true},
		{name: "deepseek bare path", host: "api.deepseek.com", path: "/chat/completions",
			want: Endpoint{Provider: "deepseek", Operation: "chat", API: APIOpenAIChatCompletions, ServerAddress: "api.deepseek.com"}, ok: true},
		{name: "mistral embeddings", host: "api.mistral.ai", path: "/v1/embeddings",
			want: Endpoint{Provider: "mistral_ai", Operation: "embeddings", API: APIOpenAIEmbeddings, ServerAddress: "api.mistral.ai"}, ok: true},

		// Host map and generic fallback.
		{name: "mapped vllm", host: "vllm.internal:8000", path: "/v1/chat/completions",
			want: Endpoint{Provider: "vllm", Operation: "chat", API: APIOpenAIChatCompletions, ServerAddress: "vllm.internal", ServerPort: 8000}, ok: true},
		{name: "mapped host without port key", host: "litellm.corp:4000", path: "/chat/completions",
			want: Endpoint{Provider: "litellm", Operation: "chat", API: APIOpenAIChatCompletions, ServerAddress: "litellm.corp", ServerPort: 4000}, ok: true},
		{name: "mapped host speaks anthropic", host: "litellm.corp", path: "/v1/messages",
			want: Endpoint{Provider: "litellm", Operation: "chat", API: APIAnthropicMessages, ServerAddress: "litellm.corp"}, ok: true},
		{name: "mapped ipv6", host: "[FD00::7]:9000", path: "/v1/completions",
			want: Endpoint{Provider: "tgi", Operation: "text_completion", API: APIOpenAICompletions, ServerAddress: "fd00::7", ServerPort: 9000}, ok: true},
		{name: "mapped host other port not mapped", host: "vllm.internal:9999", path: "/chat/completions"},
		{name: "unknown host v1", host: "10.0.0.7:8000", path: "/v1/chat/completions",
			want: Endpoint{Provider: "openai_compatible", Operation: "chat", API: APIOpenAIChatCompletions, ServerAddress: "10.0.0.7", ServerPort: 8000}, ok: true},
		{name: "unknown host prefixed v1", host: "gw.example", path: "/serving/llama/v1/embeddings",
			want: Endpoint{Provider: "openai_compatible", Operation: "embeddings", API: APIOpenAIEmbeddings, ServerAddress: "gw.example"}, ok: true},
		{name: "unknown host bare chat with messages body", host: "gw.example", path: "/chat/completions", body: ` {"model":"m","messages":[]}`,
			want: Endpoint{Provider: "openai_compatible", Operation: "chat", API: APIOpenAIChatCompletions, ServerAddress: "gw.example"}, ok: true},
		{name: "unknown host bare chat without messages", host: "gw.example", path: "/chat/completions", body: `{"model":"m"}`},
		{name: "unknown host bare completions", host: "gw.example", path: "/completions"},
		{name: "unknown host other path", host: "example.com", path: "/index.html"},

		// What the traffic says, at addresses that name no provider.
		{name: "bedrock at unknown address by its signature scope", host: "10.0.0.9:8443", path: "/model/m/converse",
			header: hdr{"Authorization": {"AWS4-HMAC-SHA256 bedrock"}},
			want:   Endpoint{Provider: "aws.bedrock", Operation: "chat", API: APIBedrockConverse, Model: "m", ServerAddress: "10.0.0.9", ServerPort: 8443}, ok: true},
		{name: "bedrock shape signed for another service", host: "10.0.0.9:8443", path: "/model/m/converse",
			header: hdr{"Authorization": {"AWS4-HMAC-SHA256"}}},
		{name: "bedrock shape with a bearer credential", host: "10.0.0.9:8443", path: "/model/m/converse",
			header: hdr{"Authorization": {""}}},
		{name: "ollama chat at unknown address", host: "gpu-7:8081", path: "/api/chat", body: `{"model":"llama3","messages":[{"role":"user","content":"hi"}]}`,
			want: Endpoint{Provider: "ollama", Operation: "chat", API: APIOllamaChat, ServerAddress: "gpu-7", ServerPort: 8081}, ok: true},
		{name: "ollama generate at unknown address", host: "gpu-7:8081", path: "/api/generate", body: `{"model":"llama3","prompt":"hi"}`,
			want: Endpoint{Provider: "ollama", Operation: "text_completion", API: APIOllamaGenerate, ServerAddress: "gpu-7", ServerPort: 8081}, ok: true},
		{name: "ollama embed at unknown address", host: "gpu-7:8081", path: "/api/embed", body: `{"model":"nomic","input":"hi"}`,
			want: Endpoint{Provider: "ollama", Operation: "embeddings", API: APIOllamaEmbed, ServerAddress: "gpu-7", ServerPort: 8081}, ok: true},
		{name: "api/chat without messages", host: "gpu-7:8081", path: "/api/chat", body: `{"model":"llama3"}`},
		{name: "api/chat body not json", host: "gpu-7:8081", path: "/api/chat", body: `model=llama3&messages=1`},
		{name: "a REST path that happens to be /v1/chat", host: "crm.example:8080", path: "/v1/chat", body: `{"model":"m","messages":[]}`},
		{name: "a model field that is no LLM call", host: "crm.example:8080", path: "/api/models", body: `{"model":"m"}`},
		{name: "azure api-key on an OpenAI path at unknown address", host: "10.0.0.7:8000", path: "/v1/chat/completions",
			header: hdr{"Api-Key": {""}},
			want:   Endpoint{Provider: "azure.ai.openai", Operation: "chat", API: APIOpenAIChatCompletions, ServerAddress: "10.0.0.7", ServerPort: 8000}, ok: true},
		{name: "anthropic-version wins over the OpenAI-compatible guess", host: "gw.example", path: "/v1/messages",
			header: hdr{"Anthropic-Version": {"2023-06-01"}},
			want:   Endpoint{Provider: "anthropic", Operation: "chat", API: APIAnthropicMessages, APIVersion: "2023-06-01", ServerAddress: "gw.example"}, ok: true},

		// Hostile or malformed.
		{name: "bad port", host: "api.openai.com:99999", path: "/v1/chat/completions"},
		{name: "signed port", host: "api.openai.com:+443", path: "/v1/chat/completions"},
		{name: "relative path", host: "api.openai.com", path: "v1/chat/completions"},
		{name: "empty path", host: "api.openai.com", path: ""},
		{name: "long host", host: strings.Repeat("a", 400), path: "/v1/chat/completions"},
		{name: "long path", host: "api.openai.com", path: "/v1/" + strings.Repeat("x/", 5000) + "chat/completions"},
		{name: "control char model dropped", host: "generativelanguage.googleapis.com", path: "/v1beta/models/a%00b:generateContent",
			want: Endpoint{Provider: "gcp.gemini", Operation: "generate_content", API: APIGeminiGenerateContent, APIVersion: "v1beta", ServerAddress: "generativelanguage.googleapis.com"}, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = "POST"
			}
			x := &Exchange{Method: method, Host: tt.host, Path: tt.path, RequestHeader: Header(tt.header), RequestBody: []byte(tt.body)}
			got, ok := Detect(x, hosts)
			assert.Equal(t, tt.want, got, "Detect(%s %s%s)", method, tt.host, tt.path)
			assert.Equal(t, tt.ok, ok, "Detect(%s %s%s): ok", method, tt.host, tt.path)
		})
	}
}

func TestDetectNilAndEmptyMethod(t *testing.T) {
	_, ok := Detect(nil, nil)
	assert.False(t, ok, "nil exchange detected")
	// A capture that does not know the method is given the benefit of the
	// doubt.
	e, ok := Detect(&Exchange{Host: "api.openai.com", Path: "/v1/chat/completions"}, nil)
	assert.True(t, ok, "got %+v, %v", e, ok)
	assert.Equal(t, semconv.GenAIProviderOpenAI, e.Provider, "got %+v, %v", e, ok)
}

func TestEndpointOpenAIAPIType(t *testing.T) {
	for api, want := range map[API]string{
		APIOpenAIChatCompletions: "chat_completions",
		APIOpenAIResponses:       "responses",
		APIOpenAIEmbeddings:      "",
		APIAnthropicMessages:     "",
	} {
		assert.Equal(t, want, (Endpoint{API: api}).OpenAIAPIType(), api)
	}
}

func TestNewHostMap(t *testing.T) {
	for _, bad := range []map[string]string{
		{"": "x"},
		{"host:0": "x"},
		{"host:abc": "x"},
		{"host/path": "x"},
		{"host": ""},
		{"host": "a\x00b"},
		{"Host": "a", "host": "b"},
		{"[::1": "x"},
	} {
		_, err := NewHostMap(bad)
		assert.Error(t, err, "NewHostMap(%q): no error", bad)
	}
	m, err := NewHostMap(map[string]string{"GPU-1.Local.:8000": "vllm", "::1": "llamacpp"})
	require.NoError(t, err)
	assert.Equal(t, "vllm", m["gpu-1.local:8000"], "not normalised: %v", m)
	assert.Equal(t, "llamacpp", m["::1"], "not normalised: %v", m)
}

func TestTopLevelKeys(t *testing.T) {
	tests := []struct {
		body string
		want uint32
	}{
		{`{"messages":[],"prompt":"x"}`, 3},
		{`{"a":"\"messages\":","prompt":1}`, 2},
		{`{"a":{"messages":1},"b":["prompt"]}`, 0},
		{`{"a":"x\\","messages":1}`, 1},
		{`{"messages"`, 1},
		{`[{"messages":1}]`, 0},
		{``, 0},
		{`{"a":1}{"messages":1}`, 0},
	}
	for _, tt := range tests {
		got := topLevelKeys([]byte(tt.body), "messages", "prompt")
		assert.Equal(t, tt.want, got, "topLevelKeys(%s) = %b, want %b", tt.body, got, tt.want)
	}
}

func FuzzDetect(f *testing.F) {
	f.Add("POST", "api.openai.com", "/v1/chat/completions", "", "", []byte(`{"messages":[]}`))
	f.Add("POST", "myres.openai.azure.com", "/openai/deployments/d/chat/completions?api-version=2024-10-21", "", "", []byte(nil))
	f.Add("POST", "api.anthropic.com", "/v1/messages", "2023-06-01", "", []byte(nil))
	f.Add("", "generativelanguage.googleapis.com", "/v1beta/models/gemini-pro:streamGenerateContent?alt=sse", "", "", []byte(nil))
	f.Add("POST", "us-central1-aiplatform.googleapis.com", "/v1/projects/p/locations/l/publishers/anthropic/models/c@1:rawPredict", "", "", []byte(nil))
	f.Add("POST", "bedrock-runtime.us-east-1.amazonaws.com", "/model/a%3Ab/invoke", "", "", []byte(`{"prompt":"x"}`))
	f.Add("POST", "gw:11434", "/api/generate", "", "", []byte(nil))
	f.Add("POST", "[::1]:8000", "https://x/v1/embeddings?api-version=%zz", "", "20250101T000000Z", []byte(`{"a":"\`))
	hosts := HostMap{"[::1]:8000": "vllm", "gw": "litellm"}
	f.Fuzz(func(t *testing.T, method, host, path, anthropicVersion, amzDate string, body []byte) {
		x := &Exchange{
			Method: method, Host: host, Path: path, RequestBody: body,
			RequestHeader: Header{"Anthropic-Version": {anthropicVersion}, "X-Amz-Date": {amzDate}},
		}
		// Each check is guarded by its condition: the fuzzer runs this
		// for every input, and testify's t.Helper is not free.
		e, ok := Detect(x, hosts)
		if !ok {
			if e != (Endpoint{}) {
				require.Zero(t, e, "not ok but %+v", e)
			}
			return
		}
		if e.Provider == "" || e.API == "" || !slices.Contains(semconv.GenAIOperations, e.Operation) {
			require.NotEmpty(t, e.Provider, "incomplete endpoint %+v", e)
			require.NotEmpty(t, e.API, "incomplete endpoint %+v", e)
			require.Contains(t, semconv.GenAIOperations, e.Operation, "incomplete endpoint %+v", e)
		}
		for _, s := range []string{e.Model, e.APIVersion, e.Deployment, e.Region} {
			if len(s) > maxModelLen || !printable(s) {
				require.LessOrEqual(t, len(s), maxModelLen, "field %q not bounded in %+v", s, e)
				require.True(t, printable(s), "field %q not printable in %+v", s, e)
			}
		}
		if len(e.ServerAddress) > maxHostLen || e.ServerPort < 0 || e.ServerPort > 65535 {
			require.LessOrEqual(t, len(e.ServerAddress), maxHostLen, "bad server %q %d", e.ServerAddress, e.ServerPort)
			require.GreaterOrEqual(t, e.ServerPort, 0, "bad server %q %d", e.ServerAddress, e.ServerPort)
			require.LessOrEqual(t, e.ServerPort, 65535, "bad server %q %d", e.ServerAddress, e.ServerPort)
		}
	})
}
