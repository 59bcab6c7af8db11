// An emitter given a capture-only option: the compiler refuses it.
package main

import "github.com/xpuscope/xpuscope/genai"

func main() {
	_, _ = genai.NewEmitter(genai.WithMaxModels(10), genai.WithBodyLimit(1<<10))
}
