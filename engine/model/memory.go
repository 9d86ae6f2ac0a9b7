package model

import (
	"errors"

	"github.com/darkroomlabs/darkroom/engine/config"
)

// Device memory of the graph path.
//
// Between calls a Runner on the graph path holds exactly these buffers on its device,
// and models/fit's estimate is built from the same numbers:
//
//   - the weights as stored: its context's variables, one per stored tensor (BF16
//     weights as BF16; int8, int4 g32 and NVFP4 codes and scales; a GGUF's blocks
//     in their own bits, taken apart into engine/quant's block formats), dequantized or widened
//     inside the graphs one matmul block at a time (Params, chunk.go), never whole;
//   - the KV cache at its capacity (CacheShapes; KVCacheBytes(cfg, Capacity(),
//     CacheDType)), a fixed size once Reserve has sized it for the context;
//   - the denoising step's self-conditioning embeddings, StepBufferBytes.
//
// The executables' transient activations and dequantization scratch are the
// backend's, freed at the end of each call (fit estimates them apart; the scratch's
// blocks are listed by StepWeightOperands, scratch.go).

// DeviceMemory is the bytes of the buffers a Runner holds on its device, by kind.
type DeviceMemory struct {
	Weights int64 // the context's variables, as stored
	Cache   int64 // the KV cache at its capacity
	Step    int64 // the runner's zero soft embedding per canvas length (a canvas's first step)
}

// Total is the sum of the parts.
func (m DeviceMemory) Total() int64 { return m.Weights + m.Cache + m.Step }

// DeviceMemory returns the buffers the runner holds now. With HostDecoder the cache is
// in host memory (CacheBytes) and counted as Cache all the same.
func (r *Runner) DeviceMemory() DeviceMemory {
	var m DeviceMemory
	for v := range r.ctx.In(Scope).IterVariablesInScope() {
		m.Weights += int64(v.Shape().Memory())
	}
	if m.Cache = r.CacheBytes(); r.split() {
		m.Cache = r.deviceCacheBytes() // the host layers' cache is in host memory
	}
	for _, t := range r.zeroSoft {
		m.Step += int64(t.Shape().Memory())
	}
	return m
}

// StepBufferBytes is what a generation holds on the device across the denoising steps
// of a canvas of c positions: three float32 [C, D] self-conditioning embeddings (the
// runner's zero input of a first step, the step's input and the output it returns).
func StepBufferBytes(cfg *config.Text, c int) int64 {
	return 3 * int64(c) * int64(cfg.HiddenSize) * 4
}

// Reserve allocates the graph cache for tokens positions now, at CacheCapacity(tokens)
// (or MinCapacity when larger), so that it stays at that fixed size on the device
// through a generation of that context instead of growing by doubling. With
// HostDecoder it does nothing (the host cache grows row by row).
func (r *Runner) Reserve(tokens int) error {
	if tokens < 0 {
		return errors.New("reserve cache: negative token count")
	}
	if r.HostDecoder {
		return nil
	}
	return r.ensureCapacity(max(tokens, 1))
}
