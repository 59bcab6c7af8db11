package genai

import (
	"errors"
	"fmt"
)

// ErrUnsupportedAPI is returned by Parse for an API that has no parser
// yet (Gemini embedContent).
var ErrUnsupportedAPI = errors.New("genai: no parser for this API yet")

// Parse reads a detected exchange into a Call: the endpoint's provider
// and operation, and what the API's parser finds in the bodies.
func Parse(x *Exchange, ep Endpoint) (Call, error) {
	c := Call{Provider: ep.Provider, Operation: ep.Operation}
	switch ep.API {
	case APIOpenAIChatCompletions, APIOpenAICompletions, APIOpenAIResponses, APIOpenAIEmbeddings:
		ParseOpenAI(x, &c)
	case APIAnthropicMessages:
		ParseAnthropic(x, &c)
	case APIGeminiGenerateContent:
		ParseGemini(x, &c)
	case APIOllamaChat, APIOllamaGenerate, APIOllamaEmbed:
		ParseOllama(x, &c)
	case APIBedrockConverse, APIBedrockInvoke:
		ParseBedrock(x, &c)
	default:
		return c, fmt.Errorf("%w: %s", ErrUnsupportedAPI, ep.API)
	}
	if c.RequestModel == "" {
		c.RequestModel = ep.Model
	}
	return c, nil
}
