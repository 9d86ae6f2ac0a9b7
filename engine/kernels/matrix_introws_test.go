package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
)

// randBlocks is nb blocks of GGUF type t (Q4_K, Q5_K, Q6_K, Q4_0, Q4_1, Q5_0, Q5_1 or
// Q8_0) of random bytes — the K types' 6-bit scales and minimums with their high bits
// (Q6_K's int8 scales), the 5-bit types' fifth bits, Q6_K's high two, every code —
// with random finite fp16 d (and the K types' dmin, the _1 types' m) of either sign.
func randBlocks(rng *rand.Rand, t gguf.Type, nb int) []byte {
	bb := t.BlockBytes()
	src := make([]byte, bb*nb)
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	halves := []int{0}
	switch t {
	case gguf.Q4_K, gguf.Q5_K, gguf.Q4_1, gguf.Q5_1:
		halves = []int{0, 2}
	case gguf.Q6_K:
		halves = []int{208}
	case gguf.Q3_K:
		halves = []int{108}
	case gguf.Q2_K:
		halves = []int{80, 82}
	}
	for b := range nb {
		for _, o := range halves {
			v := float32(rng.NormFloat64()) * float32(math.Ldexp(1, -rng.IntN(12)))
			binary.LittleEndian.PutUint16(src[bb*b+o:], gguf.Float32ToHalf(v))
		}
	}
	return src
}

// TestDotQ4KInt: the printer's integer Q4_K dot (dotQ4KVNNI) equals, within float32
// rounding, the same sum taken independently in float64 — engine/gguf's decoder's
// scales and minimums, x's int8 codes and scales as quantizeRow32Go makes them, the
// minimums against x's exact sums — and the dot of the decoded values with x itself
// within x's rounding: half a step of its group's scale per value.
func TestDotQ4KInt(t *testing.T) {
	if len(intRowsKernels()) == 0 {
		t.Skip("no integer Q4_K dot for this CPU (or build)")
	}
	rng := rand.New(rand.NewPCG(43, 44))
	for _, zmm := range intRowsKernels() {
		for _, nb := range []int{1, 2, 11, 64} {
			src := randBlocks(rng, gguf.Q4_K, nb)
			x := randWeights(rng, 256*nb)
			x[3] = 0 // a zero, and a group of zeros (scale 0)
			clear(x[256*(nb-1)+32 : 256*(nb-1)+64])
			xq, xs := make([]int8, 256*nb), make([]float32, 16*nb)
			q4kIntX(xq, xs, x, make([]int8, 256*nb), make([]float32, 16*nb), zmm)
			got := dotQ4KInt(xq, xs, src, nb, zmm)

			codes, pairs := make([]int8, 256*nb), make([]float32, 16*nb)
			quantizeRow32Go(codes, pairs, x, nil)
			vals := make([]float32, 256*nb)
			if err := gguf.Dequantize(gguf.Q4_K, src, vals); err != nil {
				t.Fatal(err)
			}
			var want, mag, exact, bound float64
			for b := range nb {
				blk := src[144*b : 144*(b+1)]
				d := gguf.HalfToFloat32(binary.LittleEndian.Uint16(blk))
				dmin := gguf.HalfToFloat32(binary.LittleEndian.Uint16(blk[2:]))
				var sc, mn [8]float32
				scalesMinsK4(&sc, &mn, (*[12]byte)(blk[4:16]), d, dmin)
				for j := range 8 {
					g := 8*b + j
					var isum int64
					var xsum float32
					for i := range 32 {
						p := 32*j + i
						q := blk[16+32*(j/2)+i] >> (4 * (j % 2)) & 15
						isum += int64(q) * int64(codes[32*g+i])
						xsum += x[256*b+p]
						bound += math.Abs(float64(vals[256*b+p])) * float64(pairs[2*g]) / 2
					}
					scale := float64(sc[j]) * float64(pairs[2*g]) * float64(isum)
					minimum := -float64(mn[j]) * float64(xsum)
					want += scale + minimum
					mag += math.Abs(scale) + math.Abs(minimum)
				}
			}
			for i, v := range vals {
				exact += float64(v) * float64(x[i])
			}
			if d := math.Abs(float64(got) - want); d > 1e-5*mag {
				t.Errorf("AVX-512 %v, %d blocks: %g, want %g from the integer sums (difference %.3g of %.3g)", zmm, nb, got, want, d, mag)
			}
			if d := math.Abs(float64(got) - exact); d > bound+1e-5*mag {
				t.Errorf("AVX-512 %v, %d blocks: %g, want %g, the decoded values' dot, within x's rounding %.3g (difference %.3g)", zmm, nb, got, exact, bound, d)
			}
		}
	}
}

// TestDotKQuantInt: the printer's integer Q5_K and Q6_K dots (dotQ5KIntAVX2,
// dotQ6KIntAVX2; Q3_K's and Q2_K's against the decoded values: checkIntDot) equal, within float32 rounding, the same sum taken independently in
// float64 — each value's code read from ggml's layout as its reference decoder
// reads it (Q5_K: the group's nibble and bit g of qh[i]; Q6_K: ql's nibble and two
// bits of qh, less 32), the scales (and Q5_K's minimums, against x's exact sums) as
// engine/gguf decodes them, x's int8 codes and scales as quantizeRow32Go makes them —
// and the decoded values' dot with x within x's rounding.
func TestDotKQuantInt(t *testing.T) {
	if !ymmIntRuns() {
		t.Skip("no integer Q5_K and Q6_K dots for this CPU (or build)")
	}
	rng := rand.New(rand.NewPCG(49, 50))
	for _, typ := range []gguf.Type{gguf.Q5_K, gguf.Q6_K, gguf.Q3_K, gguf.Q2_K} {
		bb := typ.BlockBytes()
		for _, nb := range []int{1, 2, 11, 64} {
			src := randBlocks(rng, typ, nb)
			x := randWeights(rng, 256*nb)
			x[3] = 0 // a zero, and a group of zeros (scale 0)
			clear(x[256*(nb-1)+32 : 256*(nb-1)+64])
			xq := make([]int8, 256*nb)
			var got float32
			if typ == gguf.Q5_K {
				xs := make([]float32, 16*nb)
				q4kIntX(xq, xs, x, make([]int8, 256*nb), make([]float32, 16*nb), false)
				got = dotQ5KInt(xq, xs, src, nb)
			} else {
				xs := make([]float32, q6kXS*nb)
				q6kIntX(xq, xs, x, make([]float32, 16*nb))
				got = dotK16Int(xq, xs, src, nb, typ)
			}
			if typ == gguf.Q3_K || typ == gguf.Q2_K {
				checkIntDot(t, typ, src, x, got)
				continue
			}

			codes, pairs := make([]int8, 256*nb), make([]float32, 16*nb)
			quantizeRow32Go(codes, pairs, x, nil)
			vals := make([]float32, 256*nb)
			if err := gguf.Dequantize(typ, src, vals); err != nil {
				t.Fatal(err)
			}
			var want, mag, exact, bound float64
			for b := range nb {
				blk := src[bb*b : bb*(b+1)]
				for g := range 8 { // groups of 32
					xsc := float64(pairs[2*(8*b+g)])
					for h := range 2 { // sixteens
						var isum int64
						var xsum float64
						var scale, minimum float64
						for i := 16 * h; i < 16*(h+1); i++ {
							p := 32*g + i
							var q int64
							if typ == gguf.Q5_K {
								q = int64(blk[48+32*(g/2)+i]>>(4*(g%2))&15) | int64(blk[16+i]>>g&1)<<4
							} else {
								half, j := g/4, g%4 // ggml's dequantize_row_q6_K
								ql := blk[64*half+32*(j%2)+i] >> (4 * (j / 2)) & 15
								qh := blk[128+32*half+i] >> (2 * j) & 3
								q = int64(ql|qh<<4) - 32
							}
							isum += q * int64(codes[256*b+p])
							xsum += float64(x[256*b+p])
							bound += math.Abs(float64(vals[256*b+p])) * xsc / 2
						}
						if typ == gguf.Q5_K {
							d := gguf.HalfToFloat32(binary.LittleEndian.Uint16(blk))
							dmin := gguf.HalfToFloat32(binary.LittleEndian.Uint16(blk[2:]))
							var sc, mn [8]float32
							scalesMinsK4(&sc, &mn, (*[12]byte)(blk[4:16]), d, dmin)
							scale = float64(sc[g]) * xsc * float64(isum)
							minimum = -float64(mn[g]) * xsum
						} else {
							d := float64(gguf.HalfToFloat32(binary.LittleEndian.Uint16(blk[208:])))
							scale = d * float64(int8(blk[192+2*g+h])) * xsc * float64(isum)
						}
						want += scale + minimum
						mag += math.Abs(scale) + math.Abs(minimum)
					}
				}
			}
			for i, v := range vals {
				exact += float64(v) * float64(x[i])
			}
			// Q6_K's codes are taken unsigned (q+32) and the 32 back apart: the products'
			// float32 sums reach twice the signed ones.
			mag *= 4
			if d := math.Abs(float64(got) - want); d > 1e-5*mag {
				t.Errorf("%s, %d blocks: %g, want %g from the integer sums (difference %.3g of %.3g)", typ, nb, got, want, d, mag)
			}
			if d := math.Abs(float64(got) - exact); d > bound+1e-5*mag {
				t.Errorf("%s, %d blocks: %g, want %g, the decoded values' dot, within x's rounding %.3g (difference %.3g)", typ, nb, got, exact, bound, d)
			}
		}
	}
}

// checkIntDot holds got, the integer dot of blocks of typ with x, to the same sum
// taken in float64 from engine/gguf's decoded values (held to ggml's reference by
// its known-block tests) and x's int8 codes and scales as quantizeRow32Go makes them,
// and to the decoded values' dot with x itself within x's rounding.
func checkIntDot(t *testing.T, typ gguf.Type, src []byte, x []float32, got float32) {
	t.Helper()
	n := len(x)
	nb := n / typ.BlockSize()
	codes, pairs := make([]int8, n), make([]float32, n/16)
	quantizeRow32Go(codes, pairs, x, nil)
	vals := make([]float32, n)
	if err := gguf.Dequantize(typ, src, vals); err != nil {
		t.Fatal(err)
	}
	var want, mag, exact, bound float64
	for i, v := range vals {
		xsc := float64(pairs[2*(i/32)])
		p := float64(v) * float64(codes[i]) * xsc
		want += p
		mag += math.Abs(p)
		exact += float64(v) * float64(x[i])
		bound += math.Abs(float64(v)) * xsc / 2
	}
	if d := math.Abs(float64(got) - want); d > 1e-5*mag {
		t.Errorf("%s, %d blocks: %g, want %g from the integer sums (difference %.3g of %.3g)", typ, nb, got, want, d, mag)
	}
	if d := math.Abs(float64(got) - exact); d > bound+1e-5*mag {
		t.Errorf("%s, %d blocks: %g, want %g, the decoded values' dot, within x's rounding %.3g (difference %.3g)", typ, nb, got, exact, bound, d)
	}
}

// TestDotIQ4Int: the printer's integer IQ4_NL and IQ4_XS dots (their levels looked up
// by VPSHUFB, the products' signs moved onto them) against engine/gguf's decoded
// values (checkIntDot), every nibble and scale from random bytes.
func TestDotIQ4Int(t *testing.T) {
	if !ymmIntRuns() {
		t.Skip("no integer IQ4 dots for this CPU (or build)")
	}
	rng := rand.New(rand.NewPCG(53, 54))
	for _, typ := range []gguf.Type{gguf.IQ4_NL, gguf.IQ4_XS} {
		for _, n := range []int{256, 512, 2816} {
			nb := n / typ.BlockSize()
			src := randBlocks(rng, typ, nb)
			x := randWeights(rng, n)
			x[5] = 0
			clear(x[32:64]) // a group of zeros (scale 0)
			xq, pairs := make([]int8, n), make([]float32, n/16)
			quantizeRow32(xq, pairs, x, nil)
			checkIntDot(t, typ, src, x, dotIQ4Int(xq, pairs, src, nb, typ))
		}
	}
}

// TestDotQ1Int: the printer's integer Q4_1 and Q5_1 dots equal, within float32
// rounding, the same sum taken independently in float64 — each value's code from
// ggml's layout (low nibbles then high ones, Q5_1's qh bit i the fifth of value i),
// d·xs·Σ code·code plus m·xs·Σ x's codes — and the decoded values' dot with x within
// x's rounding.
func TestDotQ1Int(t *testing.T) {
	if !ymmIntRuns() {
		t.Skip("no integer Q4_1 and Q5_1 dots for this CPU (or build)")
	}
	rng := rand.New(rand.NewPCG(51, 52))
	for _, typ := range []gguf.Type{gguf.Q4_1, gguf.Q5_1} {
		bb := typ.BlockBytes()
		for _, nb := range []int{1, 2, 22, 88} {
			src := randBlocks(rng, typ, nb)
			x := randWeights(rng, 32*nb)
			if nb > 2 {
				clear(x[32 : 32*2]) // a group of zeros (scale 0)
			}
			xq, pairs := make([]int8, 32*nb), make([]float32, 2*nb)
			quantizeRow32(xq, pairs, x, nil)
			got := dotQ1Int(xq, pairs, src, nb, typ)

			codes, gp := make([]int8, 32*nb), make([]float32, 2*nb)
			quantizeRow32Go(codes, gp, x, nil)
			vals := make([]float32, 32*nb)
			if err := gguf.Dequantize(typ, src, vals); err != nil {
				t.Fatal(err)
			}
			var want, mag, exact, bound float64
			for b := range nb {
				blk := src[bb*b : bb*(b+1)]
				d := float64(gguf.HalfToFloat32(binary.LittleEndian.Uint16(blk)))
				m := float64(gguf.HalfToFloat32(binary.LittleEndian.Uint16(blk[2:])))
				qs, qh := blk[4:], uint32(0)
				if typ == gguf.Q5_1 {
					qs, qh = blk[8:], binary.LittleEndian.Uint32(blk[4:])
				}
				var isum, csum int64
				for i := range 32 {
					u := int64(qs[i%16]>>(4*(i/16))&15) | int64(qh>>i&1)<<4
					isum += u * int64(codes[32*b+i])
					csum += int64(codes[32*b+i])
					bound += math.Abs(float64(vals[32*b+i])) * float64(gp[2*b]) / 2
				}
				xs := float64(gp[2*b])
				want += d*xs*float64(isum) + m*xs*float64(csum)
				mag += math.Abs(d*xs*float64(isum)) + math.Abs(m*xs*float64(csum))
			}
			for i, v := range vals {
				exact += float64(v) * float64(x[i])
			}
			if d := math.Abs(float64(got) - want); d > 1e-5*mag {
				t.Errorf("%s, %d blocks: %g, want %g from the integer sums (difference %.3g of %.3g)", typ, nb, got, want, d, mag)
			}
			if d := math.Abs(float64(got) - exact); d > bound+1e-5*mag {
				t.Errorf("%s, %d blocks: %g, want %g, the decoded values' dot, within x's rounding %.3g (difference %.3g)", typ, nb, got, exact, bound, d)
			}
		}
	}
}

// TestDotQ5_0Int: the printer's integer Q5_0 dots (dotQ5_0VNNI: pairs of blocks, an odd
// last one alone; dotQ5_0IntAVX2) equal, within float32 rounding, the same sum taken independently
// in float64 — each value's 5-bit code from ggml's layout (low nibbles then high
// ones, qh's bit i the fifth of value i), x's int8 codes and scales as
// quantizeRow32Go makes them — and the decoded values' dot with x within x's
// rounding.
func TestDotQ5_0Int(t *testing.T) {
	if len(intRowsKernels()) == 0 {
		t.Skip("no integer Q5_0 dot for this CPU (or build)")
	}
	rng := rand.New(rand.NewPCG(47, 48))
	for _, zmm := range intRowsKernels() {
		for _, nb := range []int{1, 2, 3, 22, 23, 88} {
			src := randBlocks(rng, gguf.Q5_0, nb)
			x := randWeights(rng, 32*nb)
			if nb > 2 {
				clear(x[32 : 32*2]) // a group of zeros (scale 0)
			}
			if nb > 3 {
				binary.LittleEndian.PutUint16(src[22*3:], 0x83ff) // a negative subnormal d, widened in the kernel
			}
			xq, pairs := make([]int8, 32*nb), make([]float32, 2*nb)
			quantizeRow32(xq, pairs, x, nil)
			got := dotQ5_0Int(xq, pairs, src, nb, zmm)

			codes, gp := make([]int8, 32*nb), make([]float32, 2*nb)
			quantizeRow32Go(codes, gp, x, nil)
			vals := make([]float32, 32*nb)
			if err := gguf.Dequantize(gguf.Q5_0, src, vals); err != nil {
				t.Fatal(err)
			}
			var want, mag, exact, bound float64
			for b := range nb {
				blk := src[22*b : 22*(b+1)]
				d := float64(gguf.HalfToFloat32(binary.LittleEndian.Uint16(blk)))
				qh := binary.LittleEndian.Uint32(blk[2:])
				var isum, csum int64
				for i := range 32 {
					u := int64(blk[6+i%16]>>(4*(i/16))&15) | int64(qh>>i&1)<<4
					isum += u * int64(codes[32*b+i])
					csum += int64(codes[32*b+i])
					bound += math.Abs(float64(vals[32*b+i])) * float64(gp[2*b]) / 2
				}
				want += d * float64(gp[2*b]) * float64(isum-16*csum)
				mag += math.Abs(d*float64(gp[2*b])) * float64(max(isum, -isum)+16*max(csum, -csum))
			}
			for i, v := range vals {
				exact += float64(v) * float64(x[i])
			}
			if d := math.Abs(float64(got) - want); d > 1e-5*mag {
				t.Errorf("AVX-512 %v, %d blocks: %g, want %g from the integer sums (difference %.3g of %.3g)", zmm, nb, got, want, d, mag)
			}
			if d := math.Abs(float64(got) - exact); d > bound+1e-5*mag {
				t.Errorf("AVX-512 %v, %d blocks: %g, want %g, the decoded values' dot, within x's rounding %.3g (difference %.3g)", zmm, nb, got, exact, bound, d)
			}
		}
	}
}

// TestMulRowsInt: the printer's product of a Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q4_0, Q4_1,
// Q5_0, Q5_1, IQ4_NL, IQ4_XS or NVFP4 matrix (one to three rows
// of x, the rows of w across the workers) takes the integer dot where intRows — each
// output its row's integer dot with x's quantized row, bit for bit — and the float
// kernels where the integer products are off, within x's rounding of each other.
func TestMulRowsInt(t *testing.T) {
	const rows, cols = 37, 512
	rng := rand.New(rand.NewPCG(45, 46))
	type intCase struct {
		name   string
		w      *Matrix
		rowDot func(x []float32, r int) float32 // row r's integer dot with x
		vals   func(r int) []float32            // row r decoded
	}
	ggufCase := func(typ gguf.Type, data []byte) intCase {
		w := &Matrix{Rows: rows, Cols: cols, GGUF: typ, Data: data}
		bb, nb := typ.BlockBytes(), cols/typ.BlockSize()
		row := func(r int) []byte { return w.Data[r*nb*bb : (r+1)*nb*bb] }
		return intCase{typ.String(), w, func(x []float32, r int) float32 {
			switch typ {
			case gguf.Q4_K:
				zmm := intRowsZMM()
				xq, xs := make([]int8, cols), make([]float32, cols/16)
				q4kIntX(xq, xs, x, make([]int8, cols), make([]float32, cols/16), zmm)
				return dotQ4KInt(xq, xs, row(r), nb, zmm)
			case gguf.Q5_K:
				xq, xs := make([]int8, cols), make([]float32, cols/16)
				q4kIntX(xq, xs, x, make([]int8, cols), make([]float32, cols/16), false)
				return dotQ5KInt(xq, xs, row(r), nb)
			case gguf.Q6_K, gguf.Q3_K, gguf.Q2_K:
				xq, xs := make([]int8, cols), make([]float32, q6kXS*nb)
				q6kIntX(xq, xs, x, make([]float32, cols/16))
				return dotK16Int(xq, xs, row(r), nb, typ)
			}
			xq, pairs := make([]int8, cols), make([]float32, cols/16)
			quantizeRow32(xq, pairs, x, nil)
			switch typ {
			case gguf.Q4_0:
				return dotQ4_0Int(xq, pairs, row(r), nb)
			case gguf.Q4_1, gguf.Q5_1:
				return dotQ1Int(xq, pairs, row(r), nb, typ)
			case gguf.IQ4_NL, gguf.IQ4_XS:
				return dotIQ4Int(xq, pairs, row(r), nb, typ)
			}
			return dotQ5_0Int(xq, pairs, row(r), nb, intRowsZMM())
		}, func(r int) []float32 {
			vals := make([]float32, cols)
			if err := gguf.Dequantize(typ, row(r), vals); err != nil {
				t.Fatal(err)
			}
			return vals
		}}
	}
	fp4 := nvfp4Matrix(t, rng, rows, cols)
	stride := cols/16 + quant.NVFP4ScaleBytes
	cases := []intCase{ggufCase(gguf.Q4_K, randBlocks(rng, gguf.Q4_K, rows*cols/256)),
		ggufCase(gguf.Q5_K, randBlocks(rng, gguf.Q5_K, rows*cols/256)), ggufCase(gguf.Q6_K, randBlocks(rng, gguf.Q6_K, rows*cols/256)),
		ggufCase(gguf.Q3_K, randBlocks(rng, gguf.Q3_K, rows*cols/256)), ggufCase(gguf.Q2_K, randBlocks(rng, gguf.Q2_K, rows*cols/256)),
		ggufCase(gguf.Q4_1, randBlocks(rng, gguf.Q4_1, rows*cols/32)), ggufCase(gguf.Q5_1, randBlocks(rng, gguf.Q5_1, rows*cols/32)),
		ggufCase(gguf.IQ4_NL, randBlocks(rng, gguf.IQ4_NL, rows*cols/32)), ggufCase(gguf.IQ4_XS, randBlocks(rng, gguf.IQ4_XS, rows*cols/256)),
		ggufCase(gguf.Q5_0, randBlocks(rng, gguf.Q5_0, rows*cols/32)), ggufCase(gguf.Q4_0, randBlocks(rng, gguf.Q4_0, rows*cols/32)),
		{"nvfp4", fp4.w, func(x []float32, r int) float32 {
			xq, pairs, xsum := make([]int8, cols), make([]float32, cols/16), make([]float32, cols/16)
			quantizeRow32(xq, pairs, x, nil)
			nvfp4XSums(xsum, xq, pairs)
			nibbleOrderX(xq)
			return dotNVFP4Int(xq, pairs, xsum, fp4.w.Data[r*cols/2:(r+1)*cols/2], fp4.w.Scales[r*stride:(r+1)*stride], intRowsZMM())
		}, func(r int) []float32 { return fp4.want[r*cols : (r+1)*cols] }}}
	for _, c := range cases {
		w := c.w
		if err := w.Check(); err != nil {
			t.Fatal(err)
		}
		if !w.intRows() {
			t.Logf("%s: the printer's products are not integer on this CPU (or build)", c.name)
			continue
		}
		for m := 1; m < dotRows; m++ {
			a := randWeights(rng, m*cols)
			got, float := make([]float32, m*rows), make([]float32, m*rows)
			if err := w.MulNT(got, a, m); err != nil {
				t.Fatal(err)
			}
			was := SetIntProducts(false)
			err := w.MulNT(float, a, m)
			SetIntProducts(was)
			if err != nil {
				t.Fatal(err)
			}
			for i := range m {
				x := a[i*cols : (i+1)*cols]
				codes, pairs := make([]int8, cols), make([]float32, cols/16)
				quantizeRow32Go(codes, pairs, x, nil)
				for r := range rows {
					if want := c.rowDot(x, r); got[i*rows+r] != want {
						t.Fatalf("%s, m %d, out[%d, %d] = %g, want %g (its row's integer dot)", c.name, m, i, r, got[i*rows+r], want)
					}
					var bound float64
					for p, v := range c.vals(r) {
						bound += math.Abs(float64(v)) * (float64(pairs[2*(p/32)])/2 + 1e-5*math.Abs(float64(x[p])))
					}
					if d := math.Abs(float64(got[i*rows+r] - float[i*rows+r])); d > bound {
						t.Errorf("%s, m %d, out[%d, %d] = %g, the float kernel's %g: more than x's rounding %.3g apart", c.name, m, i, r, got[i*rows+r], float[i*rows+r], bound)
					}
				}
			}
		}
	}
}

// TestDotNVFP4Int: the printer's integer NVFP4 dots (dotNVFP4VNNI, dotNVFP4IntAVX2)
// equal, within float32 rounding, the same sum taken independently in float64 — the
// E2M1 table's values, the block scales as quant.NVFP4RowScales decodes them, x's
// int8 codes and scales as quantizeRow32Go makes them — and the dot of the decoded
// values with x itself within x's rounding: half a step of its group's scale per
// value. Every code (both zeros, all signs) and scales from subnormal to large come up.
func TestDotNVFP4Int(t *testing.T) {
	if len(intRowsKernels()) == 0 {
		t.Skip("no integer NVFP4 dot for this CPU (or build)")
	}
	rng := rand.New(rand.NewPCG(45, 46))
	for _, zmm := range intRowsKernels() {
		for i, nb := range []int{1, 2, 11, 44, 3, 8} {
			top := 0x7f // scale codes: any finite non-negative FP8 E4M3, subnormals too
			if i >= 4 {
				top = 16 // subnormals and the smallest normals alone, so that their values tell
			}
			k := 64 * nb
			codes := make([]byte, k/2)
			for i := range codes {
				codes[i] = byte(rng.Uint32())
			}
			srow := make([]byte, k/16+quant.NVFP4ScaleBytes)
			for i := range k / 16 {
				srow[i] = byte(rng.IntN(top))
				if rng.IntN(8) == 0 {
					srow[i] |= 0x80 // (and, though ModelOpt writes none, negative)
				}
			}
			copy(srow[k/16:], []byte{0x12, 0x34, 0x56, 120}) // a scale_2 of 0x563412·2^-30
			scales := make([]float32, k/16)
			quant.NVFP4RowScales(scales, srow)
			x := randWeights(rng, k)
			x[5] = 0
			clear(x[k-32:]) // a group of zeros (scale 0)

			xq, pairs := make([]int8, k), make([]float32, k/16)
			quantizeRow32Go(xq, pairs, x, nil)
			xsum := make([]float32, k/16)
			nvfp4XSums(xsum, xq, pairs)
			xk := slices.Clone(xq) // in the kernel's order
			nibbleOrderX(xk)
			got := dotNVFP4Int(xk, pairs, xsum, codes, srow, zmm)

			var want, mag, exact, bound float64
			for i := range k {
				e := float64(quant.E2M1[codes[i/2]>>(4*(i%2))&15])
				v := e * float64(scales[i/16])
				term := v * float64(pairs[2*(i/32)]) * float64(xq[i])
				want += term
				mag += math.Abs(term)
				exact += v * float64(x[i])
				bound += math.Abs(v) * float64(pairs[2*(i/32)]) / 2
			}
			if d := math.Abs(float64(got) - want); d > 1e-5*mag+1e-30 {
				t.Errorf("zmm %v, nb %d: %g, want %g (|Δ| %g over a magnitude %g)", zmm, nb, got, want, d, mag)
			}
			if d := math.Abs(float64(got) - exact); d > bound*1.0001+1e-5*mag {
				t.Errorf("zmm %v, nb %d: %g against the exact dot %g: |Δ| %g past x's rounding %g", zmm, nb, got, exact, d, bound)
			}
		}
	}
}

// TestDotInt4Int: the printer's integer products of Darkroom's int4 rows
// (mulRowsInt4Int), symmetric and affine, float32 and bfloat16 scales, equal within
// float32 rounding the same sum taken independently in float64 — the values as
// quant.Dequantize decodes them times x's int8 codes and scales as quantizeRow32Go
// makes them — and the float kernel's product within x's rounding. Rows of one step
// (64 values), odd and even numbers of steps, and a group of zeros in x come up.
func TestDotInt4Int(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 48))
	specs := []quant.Spec{quant.Int4, quant.Int4F32, quant.Int4Affine, {Bits: 4, GroupSize: 32, Format: quant.Affine, BF16Scales: true}}
	for _, spec := range specs {
		for _, k := range []int{64, 192, 704, 2816} {
			const rows = 11
			tm := quantMatrix(spec)(t, rng, rows, k)
			if !tm.w.intRows() {
				t.Skipf("%v: the printer's int4 products are not integer on this CPU (or build)", spec)
			}
			for _, m := range []int{1, 3} {
				a := randWeights(rng, m*k)
				clear(a[k-32 : k]) // a group of zeros (scale 0)
				got, float := make([]float32, m*rows), make([]float32, m*rows)
				if err := tm.w.MulNT(got, a, m); err != nil {
					t.Fatal(err)
				}
				was := SetIntProducts(false)
				err := tm.w.MulNT(float, a, m)
				SetIntProducts(was)
				if err != nil {
					t.Fatal(err)
				}
				for i := range m {
					codes, pairs := make([]int8, k), make([]float32, k/16)
					quantizeRow32Go(codes, pairs, a[i*k:(i+1)*k], nil)
					for r := range rows {
						var want, mag, bound float64
						for p, v := range tm.want[r*k : (r+1)*k] {
							xs := float64(pairs[2*(p/32)])
							term := float64(v) * xs * float64(codes[p])
							want += term
							mag += math.Abs(term)
							bound += math.Abs(float64(v)) * (xs/2 + 1e-5*math.Abs(float64(a[i*k+p])))
						}
						g := float64(got[i*rows+r])
						if d := math.Abs(g - want); d > 1e-5*mag+1e-30 {
							t.Fatalf("%v, k %d, m %d, out[%d, %d] = %g, want %g (|Δ| %g over a magnitude %g)", spec, k, m, i, r, g, want, d, mag)
						}
						if d := math.Abs(g - float64(float[i*rows+r])); d > bound {
							t.Errorf("%v, k %d, m %d, out[%d, %d] = %g, the float kernel's %g: more than x's rounding %.3g apart", spec, k, m, i, r, g, float[i*rows+r], bound)
						}
					}
				}
			}
		}
	}
}
