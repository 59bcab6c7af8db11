package genai

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// propNoTextRaw: no prompt, completion, thinking, argument or error
// message text, and no credential, ends up in a Call. Unlike propNoText,
// the texts are read from the transcript files as written, before a
// chunk is encoded (Bedrock's binary event streams), line by line (NDJSON
// lines, event payloads) and whole.
func propNoTextRaw(t *testing.T, dir string, parse func(*Exchange) *Call) {
	for _, tr := range loadTranscripts(t, dir) {
		texts := map[string]bool{}
		for _, f := range tr.raw {
			data := f.data
			if strings.HasPrefix(f.name, "request") {
				_, data, _ = bytes.Cut(data, []byte("\n\n"))
			} else if !strings.HasPrefix(f.name, "chunk") {
				continue
			}
			allTextValues(data, texts)
			for line := range bytes.Lines(data) {
				line = bytes.TrimSpace(line)
				line, _ = bytes.CutPrefix(line, []byte("bytes "))
				line, _ = bytes.CutPrefix(line, []byte("data:"))
				allTextValues(line, texts)
			}
		}
		for _, h := range []string{"Authorization", "Api-Key", "X-Amz-Security-Token"} {
			for _, v := range tr.x.RequestHeader[h] {
				texts[v] = true
				for _, w := range strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' || r == '=' || r == '/' }) {
					if len(w) >= 16 {
						texts[w] = true
					}
				}
			}
		}
		if len(texts) == 0 {
			continue
		}
		dump := callDump(parse(&tr.x))
		for s := range texts {
			assert.NotContains(t, dump, s, "%s: the Call holds %q", tr.name, s)
		}
	}
}

// allTextValues collects the strings under keys that hold prompt,
// completion or message text in a JSON document.
func allTextValues(data []byte, out map[string]bool) {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return
	}
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(e, k)
			}
		case []any:
			for _, e := range v {
				walk(e, key)
			}
		case string:
			switch key {
			case "content", "text", "input", "prompt", "instructions", "arguments", "delta", "reasoning_content",
				"message", "error", "description", "response", "thinking", "generation", "completion", "outputText",
				"signature", "partial_json", "city", "location", "sign":
				if len(v) >= 4 {
					out[v] = true
				}
			}
		}
	}
	walk(v, "")
}
