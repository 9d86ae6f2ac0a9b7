package gguf

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// affineDequant reads the affine int4 layout back through package quant (host
// Dequantize, whose graph twin is checked equal in package quant), with the scales
// and minimums stored as Float32, or as BFloat16 when bf16 is set.
func affineDequant(t *testing.T, q []byte, scales, mins []float32, bf16 bool) []float32 {
	t.Helper()
	cols := 2 * len(q)
	spec := quant.Int4Affine
	spec.BF16Scales = bf16
	store := func(v []float32) *tensors.Tensor {
		if !bf16 {
			return tensors.FromFlatDataAndDimensions(append([]float32(nil), v...), 1, len(v))
		}
		b := make([]bfloat16.BFloat16, len(v))
		for i, x := range v {
			b[i] = quant.RoundBF16(x)
		}
		return tensors.FromFlatDataAndDimensions(b, 1, len(v))
	}
	out, err := quant.Dequantize(tensors.FromFlatDataAndDimensions(append([]byte(nil), q...), 1, len(q)),
		store(scales), spec, []int{1, cols}, store(mins))
	if err != nil {
		t.Fatal(err)
	}
	var v []float32
	out.ConstFlatData(func(flat any) { v = append(v, flat.([]float32)...) })
	return v
}

// TestRequantizeAffine: Q4_0, Q4_1 and Q4_K blocks convert to affine int4 bit for bit
// (with Float32 scales and minimums) — on quantized heavy-tailed weights and on blocks
// of random bytes (every 6-bit scale/min index, every nibble) — and with BFloat16
// scales and minimums the error is measured and small next to the GGUF's own.
func TestRequantizeAffine(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const rows, cols = 64, 2816
	x := gaussian(r, rows*cols)
	for _, typ := range []Type{Q4_0, Q4_1, Q4_K} {
		raw, err := Quantize(typ, x)
		if err != nil {
			t.Fatal(err)
		}
		// Random bytes too, a whole number of 2816-wide rows of 256-element blocks
		// for Q4_K (11 per row).
		rnd := make([]byte, 0, 2*cols/typ.BlockSize()*typ.BlockBytes())
		for len(rnd) < cap(rnd) {
			rnd = append(rnd, randomBlock(r, typ)...)
		}
		for k, src := range [][]byte{raw, rnd} {
			n := len(src) / typ.BlockBytes() * typ.BlockSize()
			g := make([]float32, n)
			if err := Dequantize(typ, src, g); err != nil {
				t.Fatal(err)
			}
			q, scales, mins := make([]byte, n/2), make([]float32, n/Group), make([]float32, n/Group)
			if err := RequantizeAffineParallel(typ, src, q, scales, mins, 4); err != nil {
				t.Fatal(err)
			}
			d := affineDequant(t, q, scales, mins, false)
			for i := range g {
				if math.Float32bits(d[i]) != math.Float32bits(g[i]) && !(d[i] == 0 && g[i] == 0) {
					t.Fatalf("%s (input %d) element %d: affine %v, GGUF %v", typ, k, i, d[i], g[i])
				}
			}
			if k == 1 {
				continue
			}
			b := affineDequant(t, q, scales, mins, true)
			extra, maxAbs := relRMS(b, g)
			own, _ := relRMS(g, x)
			total, _ := relRMS(b, x)
			t.Logf("%-5s → affine int4 g32: f32 scales exact; bf16 scales extra rel RMS %.4f, max abs %.1e (GGUF's own %.4f; total vs source %.4f)",
				typ, extra, maxAbs, own, total)
			if extra > 0.01 || extra > 0.1*own {
				t.Errorf("%s with bf16 scales and minimums: extra rel RMS %.4f (own %.4f), want ≤ 0.01 and ≤ 0.1× own", typ, extra, own)
			}
		}
	}
	if err := RequantizeAffine(Q5_0, make([]byte, 22), make([]byte, 16), make([]float32, 1), make([]float32, 1)); err == nil {
		t.Error("Q5_0 → affine int4: want an error (not exact)")
	}
	raw, _ := Quantize(Q4_K, x[:512])
	if err := RequantizeAffine(Q4_K, raw, make([]byte, 255), make([]float32, 16), make([]float32, 16)); err == nil {
		t.Error("short output buffer: want an error")
	}
	if err := RequantizeAffine(Q4_K, raw[:100], make([]byte, 256), make([]float32, 16), make([]float32, 16)); err == nil {
		t.Error("partial block: want an error")
	}
}
