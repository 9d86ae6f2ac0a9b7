package gguf

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

func TestHalf(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := HalfToFloat32(uint16(h))
		if f != f {
			continue
		}
		if back := Float32ToHalf(f); back != uint16(h) {
			t.Fatalf("half %#04x → %v → %#04x", h, f, back)
		}
	}
	for _, c := range []struct {
		f float32
		h uint16
	}{{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65520, 0x7c00}, {5.960464477539063e-08, 1}, {1e-8, 0},
		{1.0009765625 + 0.00048828125, 0x3c02}, // tie between 0x3c01 and 0x3c02 → even
		{0.1, 0x2e66}} {
		if got := Float32ToHalf(c.f); got != c.h {
			t.Errorf("Float32ToHalf(%v) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	if got := Float32ToBF16(1.00390625); got != 0x3f80 { // tie → even
		t.Errorf("Float32ToBF16 tie = %#04x", got)
	}
}

// half returns the binary16 bits of a value that is exactly representable.
func half(f float32) []byte { return binary.LittleEndian.AppendUint16(nil, Float32ToHalf(f)) }

func h64(b []byte) float64 { return float64(HalfToFloat32(binary.LittleEndian.Uint16(b))) }

// refBlock is an independent float64 reading of one block, written from the block
// formulas (element by element, not in ggml's loop order).
func refBlock(t Type, blk []byte) []float64 {
	switch t {
	case Q4_0, Q4_1, Q5_0, Q5_1, Q8_0:
		out := make([]float64, 32)
		d := h64(blk)
		for e := range out {
			switch t {
			case Q8_0:
				out[e] = float64(int8(blk[2+e])) * d
				continue
			}
			qs := blk[len(blk)-16:]
			low := int(qs[e%16] & 15)
			if e >= 16 {
				low = int(qs[e%16] >> 4)
			}
			switch t {
			case Q4_0:
				out[e] = float64(low-8) * d
			case Q4_1:
				out[e] = float64(low)*d + h64(blk[2:])
			case Q5_0, Q5_1:
				qh := binary.LittleEndian.Uint32(blk[len(blk)-20:])
				q := low + 16*int(qh>>uint(e)&1)
				if t == Q5_0 {
					out[e] = float64(q-16) * d
				} else {
					out[e] = float64(q)*d + h64(blk[2:])
				}
			}
		}
		return out
	case Q4_K, Q5_K:
		out := make([]float64, QK_K)
		d, dmin := h64(blk), h64(blk[2:])
		sc := blk[4:16]
		six := func(s int) (scale, min int) {
			if s < 4 {
				return int(sc[s] & 63), int(sc[s+4] & 63)
			}
			return int(sc[s+4]&15) | int(sc[s-4]>>6)<<4, int(sc[s+4]>>4) | int(sc[s]>>6)<<4
		}
		for e := range out {
			s, l := e/32, e%32
			qs := blk[16:144]
			if t == Q5_K {
				qs = blk[48:176]
			}
			b := qs[(s/2)*32+l]
			q := int(b & 15)
			if s%2 == 1 {
				q = int(b >> 4)
			}
			if t == Q5_K {
				q += 16 * int(blk[16+l]>>uint(s)&1)
			}
			scale, min := six(s)
			out[e] = d*float64(scale)*float64(q) - dmin*float64(min)
		}
		return out
	case Q6_K:
		out := make([]float64, QK_K)
		d := h64(blk[208:])
		for e := range out {
			h, r := e/128, e%128
			k, l := r/32, r%32
			b := blk[h*64+l+(k%2)*32]
			low := int(b & 15)
			if k >= 2 {
				low = int(b >> 4)
			}
			hi := int(blk[128+h*32+l]>>uint(2*k)) & 3
			sc := int8(blk[192+h*8+l/16+2*k])
			out[e] = d * float64(sc) * float64(low|hi<<4-32)
		}
		return out
	}
	return nil
}

// randomBlock fills a block with random bytes and finite, moderate fp16 scales.
func randomBlock(r *rand.Rand, t Type) []byte {
	blk := make([]byte, t.BlockBytes())
	for i := range blk {
		blk[i] = byte(r.IntN(256))
	}
	scale := func() []byte { return half(float32(r.Float64()*0.02 + 0.001)) }
	switch t {
	case Q4_0, Q5_0, Q8_0:
		copy(blk, scale())
	case Q4_1, Q5_1, Q4_K, Q5_K:
		copy(blk, scale())
		copy(blk[2:], scale())
	case Q6_K:
		copy(blk[208:], scale())
	}
	return blk
}

func TestDequantizeBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []Type{Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K} {
		t.Run(typ.String(), func(t *testing.T) {
			for trial := 0; trial < 50; trial++ {
				blk := randomBlock(r, typ)
				// Two blocks: the second checks the block stride.
				two := append(append([]byte{}, randomBlock(r, typ)...), blk...)
				got := make([]float32, 2*typ.BlockSize())
				if err := Dequantize(typ, two, got); err != nil {
					t.Fatal(err)
				}
				want := append(refBlock(typ, two[:typ.BlockBytes()]), refBlock(typ, blk)...)
				for i, w := range want {
					if d := math.Abs(float64(got[i]) - w); d > 1e-6*math.Abs(w)+1e-9 {
						t.Fatalf("trial %d element %d: got %v, want %v", trial, i, got[i], w)
					}
				}
			}
		})
	}
}

// A hand-built Q4_K block with known scales and mins: sub-block s has scale s+1 and
// min 2s (6-bit values spread over the packed bytes), quants q = (e % 16).
func TestQ4KKnownBlock(t *testing.T) {
	blk := make([]byte, 144)
	copy(blk, half(0.5))
	copy(blk[2:], half(0.25))
	sc := blk[4:16]
	scale := func(s int) int { return s + 1 + 40*(s/4) } // s ≥ 4 uses the high bits
	minv := func(s int) int { return 2*s + 30*(s/4) }
	for s := 0; s < 8; s++ {
		ls, lm := scale(s), minv(s)
		if s < 4 {
			sc[s] |= byte(ls)
			sc[s+4] |= byte(lm)
		} else {
			sc[s+4] = byte(ls&15) | byte(lm&15)<<4
			sc[s-4] |= byte(ls>>4) << 6
			sc[s] |= byte(lm>>4) << 6
		}
	}
	for e := 0; e < QK_K; e++ {
		s, l := e/32, e%32
		q := byte(e % 16)
		if s%2 == 0 {
			blk[16+(s/2)*32+l] |= q
		} else {
			blk[16+(s/2)*32+l] |= q << 4
		}
	}
	got := make([]float32, QK_K)
	if err := Dequantize(Q4_K, blk, got); err != nil {
		t.Fatal(err)
	}
	for e := range got {
		s := e / 32
		want := 0.5*float64(scale(s))*float64(e%16) - 0.25*float64(minv(s))
		if float64(got[e]) != want {
			t.Fatalf("element %d (sub-block %d): got %v, want %v", e, s, got[e], want)
		}
	}
}

// A hand-built Q2_K block, read as ggml's dequantize_row_q2_K reads it: sub-block s
// (elements 16s…16s+15) has scale (s+1) mod 16 and minimum 15−s, element e the code
// (e/32 + e) mod 4 — the fields of qs byte n/4+l (n = 0, 128) being elements n+l,
// n+32+l, n+64+l and n+96+l, bits 0–1 to 6–7.
func TestQ2KKnownBlock(t *testing.T) {
	blk := make([]byte, 84)
	for s := range 16 {
		blk[s] = byte((s+1)%16) | byte(15-s)<<4
	}
	code := func(e int) int { return (e/32 + e) % 4 }
	for e := range QK_K {
		n, r := e/128*128, e%128
		blk[16+n/4+r%32] |= byte(code(e)) << (2 * (r / 32))
	}
	copy(blk[80:], half(0.5))
	copy(blk[82:], half(0.125))
	got := make([]float32, QK_K)
	if err := Dequantize(Q2_K, blk, got); err != nil {
		t.Fatal(err)
	}
	for e := range got {
		s := e / 16
		want := 0.5*float64((s+1)%16)*float64(code(e)) - 0.125*float64(15-s)
		if float64(got[e]) != want {
			t.Fatalf("element %d (sub-block %d): got %v, want %v", e, s, got[e], want)
		}
	}
}

// A hand-built Q3_K block, read as ggml's dequantize_row_q3_K reads it: sub-block s
// has the 6-bit scale 3s+5 (less 32: −27…18), its low nibble in byte s (s < 8) or the
// high nibble of byte s−8, its top two bits in byte 8+s%4 at bits 2·(s/4); element e
// the 3-bit code c = (5e+e/64) mod 8, its low two bits packed as Q2_K's and its top
// bit in bit e/32 of hmask[e%32]; the value d·(scale−32)·(c−4).
func TestQ3KKnownBlock(t *testing.T) {
	blk := make([]byte, 110)
	scale := func(s int) int { return 3*s + 5 }
	for s := range 16 {
		u := scale(s)
		if s < 8 {
			blk[96+s] |= byte(u & 15)
		} else {
			blk[96+s-8] |= byte(u&15) << 4
		}
		blk[96+8+s%4] |= byte(u>>4) << (2 * (s / 4))
	}
	code := func(e int) int { return (5*e + e/64) % 8 }
	for e := range QK_K {
		c := code(e)
		n, r := e/128*128, e%128
		blk[32+n/4+r%32] |= byte(c&3) << (2 * (r / 32))
		if c >= 4 {
			blk[e%32] |= 1 << (e / 32)
		}
	}
	copy(blk[108:], half(0.25))
	got := make([]float32, QK_K)
	if err := Dequantize(Q3_K, blk, got); err != nil {
		t.Fatal(err)
	}
	for e := range got {
		s := e / 16
		want := 0.25 * float64(scale(s)-32) * float64(code(e)-4)
		if float64(got[e]) != want {
			t.Fatalf("element %d (sub-block %d): got %v, want %v", e, s, got[e], want)
		}
	}
}

// iq4Levels are ggml's kvalues_iq4nl, written out again for the tests.
var iq4Levels = [16]float64{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// A hand-built IQ4_NL block, read as ggml's dequantize_row_iq4_nl reads it: element e
// the level (3e+1) mod 16, low nibbles the first 16 elements, high ones the next.
func TestIQ4NLKnownBlock(t *testing.T) {
	blk := make([]byte, 18)
	copy(blk, half(0.5))
	code := func(e int) int { return (3*e + 1) % 16 }
	for j := range 16 {
		blk[2+j] = byte(code(j)) | byte(code(j+16))<<4
	}
	got := make([]float32, 32)
	if err := Dequantize(IQ4_NL, blk, got); err != nil {
		t.Fatal(err)
	}
	for e := range got {
		if want := 0.5 * iq4Levels[code(e)]; float64(got[e]) != want {
			t.Fatalf("element %d: got %v, want %v", e, got[e], want)
		}
	}
}

// A hand-built IQ4_XS block, read as ggml's dequantize_row_iq4_xs reads it: group g
// (32 elements) has the 6-bit scale 7g+3 (less 32), its low nibble nibble g%2 of
// scales_l[g/2], its top two bits bits 2g of scales_h; element e the level
// (5e+e/32) mod 16, each group's 16 bytes laid out as IQ4_NL's.
func TestIQ4XSKnownBlock(t *testing.T) {
	blk := make([]byte, 136)
	copy(blk, half(0.25))
	scale := func(g int) int { return 7*g + 3 }
	var sh uint16
	for g := range 8 {
		blk[4+g/2] |= byte(scale(g)&15) << (4 * (g % 2))
		sh |= uint16(scale(g)>>4) << (2 * g)
	}
	binary.LittleEndian.PutUint16(blk[2:], sh)
	code := func(e int) int { return (5*e + e/32) % 16 }
	for g := range 8 {
		for j := range 16 {
			blk[8+16*g+j] = byte(code(32*g+j)) | byte(code(32*g+j+16))<<4
		}
	}
	got := make([]float32, QK_K)
	if err := Dequantize(IQ4_XS, blk, got); err != nil {
		t.Fatal(err)
	}
	for e := range got {
		g := e / 32
		if want := 0.25 * float64(scale(g)-32) * iq4Levels[code(e)]; float64(got[e]) != want {
			t.Fatalf("element %d (group %d): got %v, want %v", e, g, got[e], want)
		}
	}
}

// gaussian returns n values of a heavy-tailed distribution like trained weights
// (a Student-t with 5 degrees of freedom, scaled to std ≈ 0.02).
func gaussian(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		var chi float64
		for k := 0; k < 5; k++ {
			g := r.NormFloat64()
			chi += g * g
		}
		x[i] = float32(0.02 * r.NormFloat64() / math.Sqrt(chi/5) * math.Sqrt(3.0/5))
	}
	return x
}

func relRMS(got, want []float32) (rel, maxAbs float64) {
	var num, den float64
	for i := range got {
		d := float64(got[i]) - float64(want[i])
		num += d * d
		den += float64(want[i]) * float64(want[i])
		maxAbs = max(maxAbs, math.Abs(d))
	}
	return math.Sqrt(num / den), maxAbs
}

func TestQuantizeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := gaussian(r, 4096)
	for _, c := range []struct {
		t      Type
		maxRel float64
	}{{F32, 0}, {F16, 1e-3}, {BF16, 5e-3}, {Q8_0, 0.01}, {Q6_K, 0.04}, {Q5_0, 0.06}, {Q5_1, 0.06}, {Q5_K, 0.06},
		{Q4_0, 0.12}, {Q4_1, 0.12}, {Q4_K, 0.12}, {Q3_K, 0.25}, {Q2_K, 0.5}, {IQ4_NL, 0.12}, {IQ4_XS, 0.12}} {
		raw, err := Quantize(c.t, x)
		if err != nil {
			t.Fatalf("%s: %v", c.t, err)
		}
		got := make([]float32, len(x))
		if err := Dequantize(c.t, raw, got); err != nil {
			t.Fatalf("%s: %v", c.t, err)
		}
		rel, _ := relRMS(got, x)
		if rel > c.maxRel {
			t.Errorf("%s: round-trip relative RMS error %.4f, want ≤ %.4f", c.t, rel, c.maxRel)
		}
		t.Logf("%-5s round trip: relative RMS error %.4f", c.t, rel)
	}
}

// darkroomDequant reads the Darkroom int8/int4 layout back (as package quant does).
func darkroomDequant(bits int, q []byte, scales []float32) []float32 {
	if bits == 8 {
		out := make([]float32, len(q))
		for i, b := range q {
			out[i] = float32(int8(b)) * scales[i/Group]
		}
		return out
	}
	out := make([]float32, 2*len(q))
	for i, b := range q {
		out[2*i] = float32(int(b&15)-8) * scales[2*i/Group]
		out[2*i+1] = float32(int(b>>4)-8) * scales[(2*i+1)/Group]
	}
	return out
}

// TestRequantize measures the error Darkroom's conversion adds on top of the GGUF's
// own quantization, on an expert-shaped tensor (rows of 2816 heavy-tailed values):
// exact for Q8_0 → int8 and Q4_0 → int4, small for the others.
func TestRequantize(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const rows, cols = 64, 2816
	x := gaussian(r, rows*cols)
	// For scale: `darkroom quantize --profile int4` on the full-precision weights
	// (package quant: s = max|x|/7, levels −7…7).
	qw, qs, err := quant.Quantize(tensors.FromFlatDataAndDimensions(x, rows, cols), quant.Int4)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := quant.Dequantize(qw, qs, quant.Int4, []int{rows, cols})
	if err != nil {
		t.Fatal(err)
	}
	direct.ConstFlatData(func(flat any) {
		rel, _ := relRMS(flat.([]float32), x)
		t.Logf("for scale: Darkroom int4 g32 straight from the source weights: relative RMS error %.4f", rel)
	})
	for _, c := range []struct {
		t            Type
		bits         int
		maxExtra     float64 // relative RMS of (requantized − GGUF dequantized)
		maxExtraOver float64 // extra error as a share of the GGUF's own error
	}{
		{Q8_0, 8, 0, 0}, {Q4_0, 4, 0, 0},
		{Q6_K, 8, 0.01, 0.5},
		{Q5_0, 4, 0.12, 4}, {Q5_1, 4, 0.12, 4}, {Q5_K, 4, 0.12, 4},
		{Q4_1, 4, 0.12, 2}, {Q4_K, 4, 0.12, 2},
	} {
		raw, err := Quantize(c.t, x)
		if err != nil {
			t.Fatal(err)
		}
		g := make([]float32, len(x))
		if err := Dequantize(c.t, raw, g); err != nil {
			t.Fatal(err)
		}
		q := make([]byte, len(x)*c.bits/8)
		scales := make([]float32, len(x)/Group)
		if err := RequantizeParallel(c.t, raw, c.bits, q, scales, make([]float32, len(x)), 4); err != nil {
			t.Fatal(err)
		}
		d := darkroomDequant(c.bits, q, scales)
		extra, maxAbs := relRMS(d, g)
		own, _ := relRMS(g, x)
		total, _ := relRMS(d, x)
		t.Logf("%-5s → int%d g32: extra error vs GGUF dequant: rel RMS %.4f, max abs %.2e (GGUF's own error %.4f; total vs source %.4f)",
			c.t, c.bits, extra, maxAbs, own, total)
		if c.maxExtra == 0 {
			if extra != 0 {
				t.Errorf("%s → int%d should be exact, got relative RMS %.3g", c.t, c.bits, extra)
			}
			continue
		}
		if extra > c.maxExtra || extra > c.maxExtraOver*own {
			t.Errorf("%s → int%d: extra relative RMS %.4f (own %.4f), want ≤ %.3f and ≤ %.1f× own", c.t, c.bits, extra, own, c.maxExtra, c.maxExtraOver)
		}
		if c.bits == 4 {
			// engine/weights stores requantized int4 scales as BFloat16: the rounding
			// must add next to nothing.
			for i := range scales {
				scales[i] = quant.RoundBF16(scales[i]).Float32()
			}
			bf, _ := relRMS(darkroomDequant(c.bits, q, scales), g)
			t.Logf("%-5s → int4 g32 with bf16 scales: extra rel RMS %.4f", c.t, bf)
			if bf > extra*1.01 {
				t.Errorf("%s → int4, bf16 scales: extra rel RMS %.4f vs %.4f with f32 scales", c.t, bf, extra)
			}
		}
	}
}

func TestRequantizeErrors(t *testing.T) {
	raw := make([]byte, IQ2_XS.BlockBytes())
	if err := Requantize(IQ2_XS, raw, 4, make([]byte, 128), make([]float32, 8), make([]float32, 256)); err == nil {
		t.Error("IQ2_XS: want a not-supported error")
	}
	raw, _ = Quantize(Q8_0, make([]float32, 64))
	if err := Requantize(Q8_0, raw, 8, make([]byte, 10), make([]float32, 2), nil); err == nil {
		t.Error("short output buffer: want an error")
	}
	if err := Dequantize(Q4_K, make([]byte, 100), make([]float32, 256)); err == nil {
		t.Error("partial block: want an error")
	}
}

// BenchmarkRequantize measures conversion speed (bytes/s are of float32 output
// equivalent: 4 bytes per element), to estimate loading a 26B file.
func BenchmarkRequantize(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	x := gaussian(r, 1<<20)
	for _, c := range []struct {
		t    Type
		bits int
	}{{Q4_K, 4}, {Q5_0, 4}, {Q6_K, 8}, {Q8_0, 8}, {Q4_0, 4}} {
		raw, _ := Quantize(c.t, x)
		q := make([]byte, len(x)*c.bits/8)
		scales := make([]float32, len(x)/Group)
		tmp := make([]float32, len(x))
		b.Run(c.t.String(), func(b *testing.B) {
			b.SetBytes(int64(4 * len(x)))
			for i := 0; i < b.N; i++ {
				if err := RequantizeParallel(c.t, raw, c.bits, q, scales, tmp, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
