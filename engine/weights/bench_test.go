package weights

import (
	"path/filepath"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/quant"
)

// benchConfig is a mid-size model (~130M parameters) for load/quantize throughput.
func benchConfig() *config.Model {
	cfg := config.Tiny()
	tx := &cfg.Text
	tx.VocabSize, tx.HiddenSize, tx.IntermediateSize, tx.MoEIntermediateSize = 32768, 512, 1024, 256
	tx.NumExperts, tx.TopKExperts = 32, 4
	tx.NumAttentionHeads, tx.NumKeyValueHeads, tx.NumGlobalKVHeads, tx.HeadDim, tx.GlobalHeadDim = 8, 4, 2, 64, 128
	return cfg
}

// BenchmarkLoad measures loading a sharded bf16 checkpoint (go test -bench Load -run X).
func BenchmarkLoad(b *testing.B) {
	cfg := benchConfig()
	dir := b.TempDir()
	if err := Save(Random(cfg, 1), cfg, dir, SaveOptions{Shards: 3, DType: "bf16"}); err != nil {
		b.Fatal(err)
	}
	var bytes int64
	for b.Loop() {
		s, err := Load(dir, cfg)
		if err != nil {
			b.Fatal(err)
		}
		bytes = s.Bytes()
	}
	b.SetBytes(bytes)
}

// BenchmarkQuantizeCheckpoint measures the streaming int4 converter.
func BenchmarkQuantizeCheckpoint(b *testing.B) {
	cfg := benchConfig()
	src := b.TempDir()
	if err := Save(Random(cfg, 1), cfg, src, SaveOptions{Shards: 3, DType: "bf16"}); err != nil {
		b.Fatal(err)
	}
	var total int64
	for i := 0; b.Loop(); i++ {
		if err := QuantizeCheckpoint(b.Context(), src, filepath.Join(b.TempDir(), "q"), quant.Int4Profile, func(_, n int64) { total = n }); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(total)
}
