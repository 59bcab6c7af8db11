// An emitter built with the options it shares with the capture, and a
// capture built with both kinds: this compiles.
package main

import "github.com/xpuscope/xpuscope/genai"

func main() {
	_, _ = genai.NewEmitter(genai.WithMaxModels(10), genai.WithContentCapture(0))
	_, _ = genai.NewCapture(genai.WithMaxModels(10), genai.WithBodyLimit(1<<10))
}
