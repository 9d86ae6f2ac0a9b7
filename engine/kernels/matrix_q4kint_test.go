package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/gguf"
)

// randQ4K is nb Q4_K blocks of random bytes — every 6-bit scale and minimum, their
// high bits included — with random finite fp16 d and dmin of either sign.
func randQ4K(rng *rand.Rand, nb int) []byte {
	src := make([]byte, 144*nb)
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	for b := range nb {
		for _, o := range []int{0, 2} {
			v := float32(rng.NormFloat64()) * float32(math.Ldexp(1, -rng.IntN(12)))
			binary.LittleEndian.PutUint16(src[144*b+o:], gguf.Float32ToHalf(v))
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
	if len(q4kIntKernels()) == 0 {
		t.Skip("no integer Q4_K dot for this CPU (or build)")
	}
	rng := rand.New(rand.NewPCG(43, 44))
	for _, zmm := range q4kIntKernels() {
		for _, nb := range []int{1, 2, 11, 64} {
			src := randQ4K(rng, nb)
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

// TestMulRowsQ4KInt: the printer's product of a Q4_K matrix (one to three rows of x,
// the rows of w across the workers) takes the integer dot where q4kIntRuns — each
// output the dot of its row and x's quantized row, bit for bit — and the float
// kernel where the integer products are off, within x's rounding of each other.
func TestMulRowsQ4KInt(t *testing.T) {
	if !q4kIntRuns() {
		t.Skip("the printer's Q4_K products are not integer on this CPU (or build)")
	}
	const rows, cols = 37, 512
	rng := rand.New(rand.NewPCG(45, 46))
	w := &Matrix{Rows: rows, Cols: cols, GGUF: gguf.Q4_K, Data: randQ4K(rng, rows*cols/256)}
	if err := w.Check(); err != nil {
		t.Fatal(err)
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
		zmm := q4kIntZMM()
		xq, xs := make([]int8, cols), make([]float32, cols/16)
		for i := range m {
			q4kIntX(xq, xs, a[i*cols:(i+1)*cols], make([]int8, cols), make([]float32, cols/16), zmm)
			codes, pairs := make([]int8, cols), make([]float32, cols/16)
			quantizeRow32Go(codes, pairs, a[i*cols:(i+1)*cols], nil)
			for r := range rows {
				want := dotQ4KInt(xq, xs, w.Data[r*cols/256*144:(r+1)*cols/256*144], cols/256, zmm)
				if got[i*rows+r] != want {
					t.Fatalf("m %d, out[%d, %d] = %g, want %g (its row's integer dot)", m, i, r, got[i*rows+r], want)
				}
				vals := make([]float32, cols)
				if err := gguf.Dequantize(gguf.Q4_K, w.Data[r*cols/256*144:(r+1)*cols/256*144], vals); err != nil {
					t.Fatal(err)
				}
				var bound float64
				for p, v := range vals {
					bound += math.Abs(float64(v)) * (float64(pairs[2*(p/32)])/2 + 1e-5*math.Abs(float64(a[i*cols+p])))
				}
				if d := math.Abs(float64(got[i*rows+r] - float[i*rows+r])); d > bound {
					t.Errorf("m %d, out[%d, %d] = %g, the float kernel's %g: more than x's rounding %.3g apart", m, i, r, got[i*rows+r], float[i*rows+r], bound)
				}
			}
		}
	}
}
