package train

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// InitGGUFFile is the file InitCheckpoint writes with InitOptions.GGUF m, named as
// llama.cpp's quantizer names its output ("model-Q4_K_M.gguf"); InitResult.Profile is
// the mix's name.
func InitGGUFFile(m gguf.Mix) string { return "model-" + string(m) + ".gguf" }

// ggufInit is one tensor of a GGUF checkpoint and its stored type.
type ggufInit struct {
	spec weights.Spec
	typ  gguf.Type
}

// planGGUF decides every tensor's GGUF type — llama.cpp's mix m
// (weights.GGUFType), F32 for what it keeps in float (norms, scales, the router, as
// llama.cpp's converter writes them) — and what the file holds.
func planGGUF(cfg *config.Model, m gguf.Mix) ([]ggufInit, InitResult, error) {
	res := InitResult{Profile: string(m), Files: []string{InitGGUFFile(m)}}
	var ts []ggufInit
	for _, sp := range weights.Specs(cfg) {
		typ, ok := weights.GGUFType(cfg, m, sp)
		if !ok {
			typ = gguf.F32
		}
		size, err := gguf.WriteTensor{Name: sp.GGUF, Shape: sp.Shape, Type: typ}.Size()
		if err != nil {
			return nil, res, err
		}
		ts = append(ts, ggufInit{spec: sp, typ: typ})
		res.Params += sp.Elements()
		res.Bytes += size
		res.Tensors++
	}
	if rf := gguf.RopeFreqValues(cfg); rf != nil {
		res.Tensors++
		res.Bytes += int64(4 * len(rf))
	}
	return ts, res, nil
}

// writeInitGGUF writes cfg's random weights into path as one GGUF file: llama.cpp's
// names and metadata (gguf.Metadata, the RoPE factors of the full layers), each
// tensor generated, quantized and streamed a chunk of rows at a time (the same
// values as the safetensors profiles draw for the seed).
func writeInitGGUF(ctx context.Context, cfg *config.Model, path string, plan []ggufInit, opts InitOptions, total int64) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	var done int64
	var ts []gguf.WriteTensor
	if rf := gguf.RopeFreqValues(cfg); rf != nil {
		raw := make([]byte, 4*len(rf))
		for i, v := range rf {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
		}
		ts = append(ts, gguf.WriteTensor{Name: gguf.RopeFreqs, Shape: []int{len(rf)}, Type: gguf.F32, Data: raw})
		done += int64(len(raw))
	}
	for _, t := range plan {
		wt := gguf.WriteTensor{Name: t.spec.GGUF, Shape: t.spec.Shape, Type: t.typ}
		wt.Stream = func(w io.Writer) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			err := eachInitChunk(t.spec, opts.Seed, func(vals []float32, _, _ int) initOut {
				b, err := gguf.Quantize(t.typ, vals)
				return initOut{data: b, err: err}
			}, func(o initOut) error {
				_, err := w.Write(o.data)
				done += int64(len(o.data))
				return err
			})
			if err == nil && opts.Progress != nil {
				opts.Progress(done, total)
			}
			return err
		}
		ts = append(ts, wt)
	}
	name := fmt.Sprintf("random weights (darkroom train init, seed %d)", opts.Seed)
	return gguf.Write(f, gguf.Metadata(cfg, name), ts, 0)
}
