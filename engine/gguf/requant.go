package gguf

import (
	"errors"
	"fmt"
	"math"
	"sync"
)

// Group is the group size of the Darkroom formats GGUF blocks are converted into.
const Group = 32

// How engine/weights converts each type, and the error it adds on top of the GGUF's
// own quantization (relative RMS of converted − GGUF dequantized; TestRequantize and
// TestRequantizeAffine on a 64×2816 heavy-tailed tensor, std 0.02, quantized by this
// package's simple quantizers; "own" is the GGUF's error vs the source weights):
//
//	GGUF  → Darkroom (scales)                 extra    own     bits/weight  was (symmetric int4, f32)
//	Q8_0  → int8 g32 (f32)                     0        0.007  9.0
//	Q4_0  → int4 g32 (f32)                     0        0.109  5.0
//	Q4_K  → affine int4 g32 (f32, ExactScales) 0        0.091  6.0          0.100
//	Q4_K  → affine int4 g32 (bf16, default)    0.0059   0.091  5.0          0.100
//	Q4_1  → affine int4 g32 (f32, ExactScales) 0        0.090  6.0          0.100
//	Q4_1  → affine int4 g32 (bf16, default)    0.0065   0.090  5.0          0.100
//	Q6_K  → int8 g32 (f32)                     0.0061   0.022  9.0
//	Q5_0  → int4 g32 (bf16; f32 ExactScales)   0.110    0.054  4.5 (5.0)
//	Q5_1  → int4 g32 (bf16; f32 ExactScales)   0.103    0.044  4.5 (5.0)
//	Q5_K  → int4 g32 (bf16; f32 ExactScales)   0.103    0.044  4.5 (5.0)
//
// For comparison, `darkroom quantize --profile int4` on the source weights gives 0.123.
// bf16 scales change the requantized int4 errors by under 0.01%. Q5_0 would convert
// exactly to int8 g32 (w = d·(q−16)), but at 9 instead of 4.5 bits a weight — 4.3 GB
// more for the 26B model's Q5_0 down-projection experts — so it stays requantized.
// These conversions are what LoadGGUF does by default (a file the host path cannot
// multiply as stored); the graph path keeps every type's blocks as they are instead
// (Split; engine/weights' DeviceGGUF).

// Requantize converts whole rows of ggml blocks (raw, of type t; n elements) into
// Darkroom's int8 or int4 layout with one float32 scale per Group consecutive elements
// (package engine/quant: int8 stores q as an Int8 per element, dequantized q·s; int4
// stores the nibble q+8 two per byte, element 2j low, 2j+1 high, dequantized
// (nibble−8)·s). q receives n bytes (int8) or n/2 (int4); scales n/Group values. tmp
// is scratch of n float32s (only used when the conversion is not exact). The caller may
// store the scales as BFloat16 (engine/weights does for requantized int4).
//
// Q8_0 → int8 and Q4_0 → int4 are exact: Q8_0 is int8 with a scale per 32, Q4_0 is
// (nibble−8)·d per 32, bit for bit the same numbers. Every other type is dequantized
// and requantized group by group: int8 with s = max|x|/127; int4 with the
// least-squares scale over the 16 levels −8…7 (the scale may be negative so that the
// largest-magnitude value can take level −8), searched like ggml's make_qx_quants.
func Requantize(t Type, raw []byte, bits int, q []byte, scales []float32, tmp []float32) error {
	info, ok := t.info()
	if !ok || info.dequant == nil {
		return Dequantize(t, raw, nil) // the same "not supported" error
	}
	if len(raw)%info.typeSize != 0 {
		return fmt.Errorf("%s: %d bytes are not whole blocks", t, len(raw))
	}
	n := len(raw) / info.typeSize * info.blockSize
	if n%Group != 0 {
		return fmt.Errorf("%s: %d elements are not whole groups of %d", t, n, Group)
	}
	wantQ := n
	if bits == 4 {
		wantQ = n / 2
	} else if bits != 8 {
		return fmt.Errorf("cannot requantize to %d bits", bits)
	}
	if len(q) != wantQ || len(scales) != n/Group {
		return fmt.Errorf("requantize %s: buffers of %d and %d for %d elements", t, len(q), len(scales), n)
	}
	switch {
	case t == Q8_0 && bits == 8:
		for b := 0; b < n/32; b++ {
			blk := raw[b*34:]
			scales[b] = fp16(blk)
			copy(q[b*32:b*32+32], blk[2:34])
		}
		return nil
	case t == Q4_0 && bits == 4:
		for b := 0; b < n/32; b++ {
			blk := raw[b*18:]
			scales[b] = fp16(blk)
			qs := blk[2:18]
			nib := func(e int) byte {
				if e < 16 {
					return qs[e] & 0x0F
				}
				return qs[e-16] >> 4
			}
			out := q[b*16 : b*16+16]
			for k := range out {
				out[k] = nib(2*k) | nib(2*k+1)<<4
			}
		}
		return nil
	}
	if len(tmp) < n {
		return fmt.Errorf("requantize %s: scratch of %d for %d elements", t, len(tmp), n)
	}
	x := tmp[:n]
	info.dequant(x, raw)
	for g := 0; g < n/Group; g++ {
		vals := x[g*Group : (g+1)*Group]
		var top uint32 // the largest magnitude's bits: ≥ an infinity's for a non-finite value
		for _, v := range vals {
			top = max(top, math.Float32bits(v)&0x7fffffff)
		}
		if top >= 0x7f800000 {
			for _, v := range vals {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					return fmt.Errorf("requantize %s: non-finite value %v in group %d", t, v, g)
				}
			}
		}
		if bits == 8 {
			scales[g] = quantGroup8(vals, q[g*Group:(g+1)*Group], math.Float32frombits(top))
		} else {
			scales[g] = quantGroup4(vals, q[g*Group/2:(g+1)*Group/2])
		}
	}
	return nil
}

// quantGroup8: s = max|x|/127 (amax, given), q = round(x/s) (as package quant does).
func quantGroup8(x []float32, q []byte, amax float32) float32 {
	if amax == 0 {
		clear(q)
		return 0
	}
	s := amax / 127
	inv := 1 / s
	for i, v := range x {
		q[i] = byte(int8(min(max(nearestInt(v*inv), -127), 127)))
	}
	return s
}

// int4Trials are the trial inverse scales of quantGroup4, as offsets k in
// −(8 + 0.1·k)/xmax: ggml's make_qx_quants tries k = −9…9; these 7 give nearly the same
// error (checked by TestRequantize) at a third of the cost.
var int4Trials = []float32{-6, -4, -2, 0, 2, 4, 6}

// quantGroup4 picks levels l ∈ [−8, 7] and a scale s minimising Σ(x − s·l)²: for
// each trial inverse scale −(8 + 0.1·k)/xmax (xmax the signed value of largest
// magnitude) the levels are rounded and s is their least-squares fit; the best trial
// wins.
func quantGroup4(x []float32, q []byte) float32 {
	var amax, xmax float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, xmax = a, v
		}
	}
	if amax == 0 {
		for k := range q {
			q[k] = 8 | 8<<4
		}
		return 0
	}
	var L, tryL [Group]int8
	bestErr, bestS := float32(math.Inf(1)), float32(0)
	for _, k := range int4Trials {
		iscale := -(8 + 0.1*k) / xmax
		var sumlx, suml2 float32
		for i, v := range x {
			l := min(max(nearestInt(iscale*v), -8), 7)
			tryL[i] = int8(l)
			fl := float32(l)
			sumlx += v * fl
			suml2 += fl * fl
		}
		if suml2 == 0 {
			continue
		}
		s := sumlx / suml2
		// Σ(x − s·l)² = Σx² − 2s·Σxl + s²·Σl² = Σx² − sumlx²/suml2 at the fitted s:
		// minimising the error is maximising sumlx²/suml2.
		e := -sumlx * s
		if e < bestErr {
			bestErr, bestS, L = e, s, tryL
		}
	}
	for k := range q {
		q[k] = byte(L[2*k]+8) | byte(L[2*k+1]+8)<<4
	}
	return bestS
}

// nearestInt rounds to the nearest integer, ties to even, for |f| < 2²² (ggml's
// nearest_int: adding 1.5·2²³ leaves the integer in the low mantissa bits).
func nearestInt(f float32) int32 {
	v := f + 12582912
	return int32(math.Float32bits(v)&0x007fffff) - 0x00400000
}

// RequantizeAffine converts whole rows of Q4_0, Q4_1 or Q4_K blocks (raw; n elements)
// into Darkroom's affine int4 layout exactly (package engine/quant, Format Affine): q
// receives the n/2 bytes of unsigned nibbles (element 2j low, 2j+1 high), scales and
// mins n/Group values, so that float32(q·scale) + min is, bit for bit, the value
// ggml's dequantize_row_* computes:
//
//   - Q4_1: scale d, min m (the block's fp16 values), as ggml's q·d + m;
//   - Q4_K: per sub-block of 32, scale d·sc and min −(dmin·m) (float32 products of the
//     fp16 super-block values and the 6-bit integers, exact), as ggml's d1·q − m1;
//   - Q4_0: scale d, min −8·d (exact), so q·d − 8·d = (q−8)·d, exact in float32.
//
// Storing scales and mins as BFloat16 instead (what engine/weights does by default)
// rounds each to 8 significant bits: see TestRequantize for the error.
func RequantizeAffine(t Type, raw []byte, q []byte, scales, mins []float32) error {
	info, ok := t.info()
	if !ok || (t != Q4_0 && t != Q4_1 && t != Q4_K) {
		return fmt.Errorf("%s cannot be converted to affine int4 exactly (Q4_0, Q4_1 and Q4_K can)", t)
	}
	if len(raw)%info.typeSize != 0 {
		return fmt.Errorf("%s: %d bytes are not whole blocks", t, len(raw))
	}
	n := len(raw) / info.typeSize * info.blockSize
	if len(q) != n/2 || len(scales) != n/Group || len(mins) != n/Group {
		return fmt.Errorf("affine requantize %s: buffers of %d, %d and %d for %d elements", t, len(q), len(scales), len(mins), n)
	}
	// pack writes group g's 32 nibbles, nib(e) for element e, two per byte.
	pack := func(g int, nib func(e int) byte) {
		out := q[g*Group/2 : (g+1)*Group/2]
		for k := range out {
			out[k] = nib(2*k) | nib(2*k+1)<<4
		}
	}
	switch t {
	case Q4_0, Q4_1:
		for b := 0; b < n/32; b++ {
			blk := raw[b*info.typeSize:]
			d := fp16(blk)
			qs := blk[2:18]
			if t == Q4_0 {
				mins[b] = -8 * d
			} else {
				mins[b] = fp16(blk[2:])
				qs = blk[4:20]
			}
			scales[b] = d
			pack(b, func(e int) byte {
				if e < 16 {
					return qs[e] & 0x0F
				}
				return qs[e-16] >> 4
			})
		}
	case Q4_K:
		for b := 0; b < n/QK_K; b++ {
			blk := raw[b*144:]
			d, dmin := fp16(blk), fp16(blk[2:])
			sc := blk[4:16]
			qs := blk[16:144]
			for pair := 0; pair < 4; pair++ {
				run := qs[32*pair : 32*pair+32] // low nibbles: sub-block 2·pair, high: 2·pair+1
				for half := 0; half < 2; half++ {
					is := 2*pair + half
					s, m := scaleMinK4(is, sc)
					g := b*8 + is
					scales[g] = d * float32(s)
					mins[g] = -(dmin * float32(m))
					shift := uint(4 * half)
					pack(g, func(e int) byte { return run[e] >> shift & 0x0F })
				}
			}
		}
	}
	return nil
}

// RequantizeAffineParallel is RequantizeAffine split over up to workers goroutines by
// whole blocks.
func RequantizeAffineParallel(t Type, raw []byte, q []byte, scales, mins []float32, workers int) error {
	info, ok := t.info()
	if !ok || info.typeSize == 0 || len(raw)%info.typeSize != 0 || info.blockSize%Group != 0 {
		return RequantizeAffine(t, raw, q, scales, mins)
	}
	blocks := len(raw) / info.typeSize
	workers = min(workers, blocks/64)
	n := blocks * info.blockSize
	if workers <= 1 || len(q) != n/2 || len(scales) != n/Group || len(mins) != n/Group {
		return RequantizeAffine(t, raw, q, scales, mins)
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		b0, b1 := blocks*w/workers, blocks*(w+1)/workers
		e0, e1 := b0*info.blockSize, b1*info.blockSize
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = RequantizeAffine(t, raw[b0*info.typeSize:b1*info.typeSize], q[e0/2:e1/2], scales[e0/Group:e1/Group], mins[e0/Group:e1/Group])
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// RequantizeParallel is Requantize split over up to workers goroutines by whole
// blocks (every block converts independently). tmp must hold n float32s.
func RequantizeParallel(t Type, raw []byte, bits int, q []byte, scales []float32, tmp []float32, workers int) error {
	info, ok := t.info()
	if !ok || info.typeSize == 0 || len(raw)%info.typeSize != 0 {
		return Requantize(t, raw, bits, q, scales, tmp)
	}
	blocks := len(raw) / info.typeSize
	// Each piece must hold whole groups and, for int4, whole bytes: blocks are 32 or
	// 256 elements, so any whole number of blocks does.
	workers = min(workers, blocks/64)
	if workers <= 1 || info.blockSize%Group != 0 {
		return Requantize(t, raw, bits, q, scales, tmp)
	}
	n := blocks * info.blockSize
	if (bits == 8 && len(q) != n) || (bits == 4 && len(q) != n/2) || len(scales) != n/Group {
		return Requantize(t, raw, bits, q, scales, tmp) // reports the size error
	}
	if len(tmp) < n {
		return fmt.Errorf("requantize %s: scratch of %d for %d elements", t, len(tmp), n)
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		b0, b1 := blocks*w/workers, blocks*(w+1)/workers
		e0, e1 := b0*info.blockSize, b1*info.blockSize
		qa, qb := e0, e1 // int8: a byte per element
		if bits == 4 {
			qa, qb = e0/2, e1/2
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = Requantize(t, raw[b0*info.typeSize:b1*info.typeSize], bits, q[qa:qb], scales[e0/Group:e1/Group], tmp[e0:e1])
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
