package hubtest

import (
	"bytes"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// GGUF is a GGUF file of cfg in llama.cpp mix m, as a GGUF repo serves one: its
// metadata, and each of cfg's tensors under llama.cpp's name in the type the mix
// gives it (weights.GGUFType; F32 the rest), its weights zero. Darkroom reads its
// header before downloading it (models' checkGGUF) and plans it as the loader does.
func GGUF(cfg *config.Model, m gguf.Mix) ([]byte, error) {
	rf := gguf.RopeFreqValues(cfg)
	raw, err := gguf.Quantize(gguf.F32, rf)
	if err != nil {
		return nil, err
	}
	ts := []gguf.WriteTensor{{Name: gguf.RopeFreqs, Shape: []int{len(rf)}, Type: gguf.F32, Data: raw}}
	for _, s := range weights.Specs(cfg) {
		typ, ok := weights.GGUFType(cfg, m, s)
		if !ok {
			typ = gguf.F32
		}
		wt := gguf.WriteTensor{Name: s.GGUF, Shape: s.Shape, Type: typ}
		n, err := wt.Size()
		if err != nil {
			return nil, err
		}
		wt.Data = make([]byte, n)
		ts = append(ts, wt)
	}
	var b bytes.Buffer
	if err := gguf.Write(&b, gguf.Metadata(cfg, "test"), ts, 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
