package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/quant"
)

// vectorPaths runs f once per vector path this CPU has for the fused dots: AVX-512 (when
// present) and AVX2 with AVX-512 turned off; under noasm, the Go code once.
func vectorPaths(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	if useAVX512 {
		t.Run("avx512", f)
		defer func(v bool) { useAVX512 = v }(useAVX512)
		useAVX512 = false
	}
	t.Run("avx2", f)
}

// TestDotInt4Rows: the fused int4 g32 dot is bit for bit dot on the decoded values (what
// the host model's twin test relies on), for symmetric and affine codes, 1 to 3 weight
// rows against 1 to 4 rows of x, group counts 1 to 257 (whole and partial unrolled
// steps), codes of 8 (zero values) and negative scales included; and within float32
// rounding of the float64 product.
func TestDotInt4Rows(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2: the products decode int4 rows")
	}
	vectorPaths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(21, 22))
		for _, groups := range []int{1, 7, 8, 22, 33, 257} {
			for _, rows := range []int{1, 2, 3} {
				for _, m := range []int{1, 2, 3, 4} {
					for _, affine := range []bool{false, true} {
						t.Run(fmt.Sprintf("%d/%dx%d/affine=%v", groups, rows, m, affine), func(t *testing.T) {
							testDotInt4Rows(t, rng, groups, rows, m, affine)
						})
					}
				}
			}
		}
	})
}

// testDotInt4Rows checks dotInt4Rows on rows weight rows against m rows of x, their
// outputs in rows of n = rows + 1 (the gap must stay untouched).
func testDotInt4Rows(t *testing.T, rng *rand.Rand, groups, rows, m int, affine bool) {
	k := 32 * groups
	x := randWeights(rng, m*k)
	codes := make([]byte, rows*k/2)
	for i := range codes {
		codes[i] = byte(rng.Uint32())
	}
	codes[0] = 0x88 // two zero values of a symmetric group
	scales, mins := randWeights(rng, rows*groups), make([]float32, rows*groups)
	off := int32(8)
	if affine {
		off, mins = 0, randWeights(rng, rows*groups)
	}
	xp := make([]float32, m*k)
	for i := range m {
		permuteInt4X(xp[i*k:(i+1)*k], x[i*k:(i+1)*k])
	}
	n := rows + 1
	got := make([]float32, m*n)
	const gap = 12345
	for i := range m {
		got[i*n+rows] = gap
	}
	if !dotInt4Rows(got, n, xp, m, codes, scales, mins, affine) {
		t.Fatal("dotInt4Rows refused vector input")
	}
	values := make([]float32, k)
	for j := range rows {
		g := scales[j*groups : (j+1)*groups]
		decodeInt4Runs(values, codes[j*k/2:(j+1)*k/2], g, mins[j*groups:(j+1)*groups], off)
		for i := range m {
			checkDot(t, fmt.Sprintf("row %d, x row %d: dotInt4Rows", j, i), got[i*n+j], values, x[i*k:(i+1)*k])
		}
	}
	for i := range m {
		if got[i*n+rows] != gap {
			t.Fatalf("x row %d: dotInt4Rows wrote past its %d rows", i, rows)
		}
	}
}

// TestDotInt8Rows: the fused int8 dot is bit for bit dot on the decoded values (so the
// AVX-512 and AVX2 paths give the same bits), 1 to 5 weight rows (pairs and a leftover
// row) against 1 to 4 rows of x (one, two or three sharing a row's decoding), on
// lengths with and without a tail past the vector code's 32 and odd and even counts of
// 32 (whole and partial unrolled steps), and within float32 rounding of the float64
// product; under noasm it is the Go code's.
func TestDotInt8Rows(t *testing.T) {
	vectorPaths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(23, 24))
		for _, k := range []int{1, 7, 31, 32, 33, 96, 257, 2816, 4097} {
			for _, rows := range []int{1, 2, 3, 5} {
				for _, m := range []int{1, 2, 3, 4} {
					t.Run(fmt.Sprintf("%d/%dx%d", k, rows, m), func(t *testing.T) {
						testDotInt8(t, rng, k, rows, m, false)
					})
				}
			}
		}
	})
}

// TestDotInt8Groups: int8 in groups of 32 or a multiple, a scale per 32 values, fused:
// bit for bit dot on the decoded values on every vector path, for the shapes
// TestDotInt8Rows takes; a row that is not whole 32s is refused.
func TestDotInt8Groups(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2: grouped int8 rows are decoded")
	}
	vectorPaths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(25, 26))
		for _, k := range []int{32, 64, 96, 2816, 4096} {
			for _, rows := range []int{1, 2, 3, 5} {
				for _, m := range []int{1, 2, 3, 4} {
					t.Run(fmt.Sprintf("%d/%dx%d", k, rows, m), func(t *testing.T) {
						testDotInt8(t, rng, k, rows, m, true)
					})
				}
			}
		}
	})
	if dotInt8Groups(make([]float32, 1), 1, make([]float32, 48), 1, make([]byte, 48), make([]float32, 2)) {
		t.Error("dotInt8Groups took a row of 48, not whole 32s")
	}
}

// testDotInt8 checks dotInt8Rows (or, grouped, dotInt8Groups) on rows weight rows of k
// codes against m rows of x, their outputs in rows of n = rows + 1 (the gap must stay
// untouched).
func testDotInt8(t *testing.T, rng *rand.Rand, k, rows, m int, grouped bool) {
	x := randWeights(rng, m*k)
	codes := make([]byte, rows*k)
	for i := range codes {
		codes[i] = byte(rng.Uint32())
	}
	codes[0] = 0x80 // −128, the one code the quantizer never writes
	var scales []float32
	if grouped {
		scales = randWeights(rng, rows*k/32)
	} else {
		scales = randWeights(rng, rows)
		scales[0] = -0.0173
	}
	n := rows + 1
	got := make([]float32, m*n)
	const gap = 12345
	for i := range m {
		got[i*n+rows] = gap
	}
	if grouped {
		if !dotInt8Groups(got, n, x, m, codes, scales) {
			t.Fatal("dotInt8Groups refused AVX2 input")
		}
	} else {
		dotInt8Rows(got, n, x, m, codes, scales, make([]float32, k))
	}
	values := make([]float32, k)
	for j := range rows {
		if grouped {
			for c := range k / 32 {
				decodeInt8(values[32*c:32*(c+1)], codes[j*k+32*c:j*k+32*(c+1)], scales[j*k/32+c])
			}
		} else {
			decodeInt8(values, codes[j*k:(j+1)*k], scales[j])
		}
		for i := range m {
			checkDot(t, fmt.Sprintf("row %d, x row %d", j, i), got[i*n+j], values, x[i*k:(i+1)*k])
		}
	}
	for i := range m {
		if got[i*n+rows] != gap {
			t.Fatalf("x row %d: wrote past its %d rows", i, rows)
		}
	}
}

// checkDot fails unless got is bit for bit dot(values, x) and within float32 rounding
// of the float64 dot product.
func checkDot(t *testing.T, what string, got float32, values, x []float32) {
	t.Helper()
	if want := dot(values, x); got != want {
		t.Fatalf("%s = %g, dot of the decoded values %g", what, got, want)
	}
	var sum, abs float64
	for i, v := range values {
		sum += float64(v) * float64(x[i])
		abs += math.Abs(float64(v) * float64(x[i]))
	}
	if math.Abs(float64(got)-sum) > 2e-6*abs {
		t.Fatalf("%s = %g, float64 %g (Σ|terms| %g)", what, got, sum, abs)
	}
}

// BenchmarkInt8MulVec: the AR step's int8 products at the 26B's shapes (the int4
// profile stores attention, the dense MLP and the head as int8 with a float32 scale
// per row; int8g32 at q_proj's shape), in GB/s of stored bytes read, on each vector
// path (avx2 is the AVX-512 CPU with AVX-512 turned off). The weights fit in L3 (2.1 to
// 23 MB), as a token's next product's do not: PeersGEMV streams from memory.
func BenchmarkInt8MulVec(b *testing.B) {
	shapes := []struct {
		name string
		n, k int
		g    int // values a scale; 0 for one a row
	}{
		{"q_proj", 4096, 2816, 0},
		{"k_proj", 2048, 2816, 0},
		{"o_proj", 2816, 4096, 0},
		{"gate_proj", 2112, 2816, 0},
		{"down_proj", 2816, 2112, 0},
		{"global_q_proj", 8192, 2816, 0},
		{"q_proj-g32", 4096, 2816, 32},
	}
	paths := []bool{false}
	if useAVX512 {
		paths = []bool{true, false}
	}
	defer func(v bool) { useAVX512 = v }(useAVX512)
	rng := rand.New(rand.NewPCG(5, 5))
	for _, s := range shapes {
		spec, scales := quant.Int8, s.n
		if s.g > 0 {
			spec, scales = quant.Spec{Bits: 8, GroupSize: s.g}, s.n*s.k/s.g
		}
		codes := make([]byte, s.n*s.k)
		for i := range codes {
			codes[i] = byte(rng.Uint32())
		}
		sb := make([]byte, 4*scales)
		for i := range scales {
			binary.LittleEndian.PutUint32(sb[4*i:], math.Float32bits(float32(1+rng.Float64())/127))
		}
		w := &Matrix{Rows: s.n, Cols: s.k, Spec: spec, Data: codes, Scales: sb}
		x, out := randWeights(rng, s.k), make([]float32, s.n)
		for _, avx512 := range paths {
			path := "avx2"
			if avx512 {
				path = "avx512"
			}
			if !useAVX2 {
				path = "go"
			}
			b.Run(s.name+"/"+path, func(b *testing.B) {
				useAVX512 = avx512
				for b.Loop() {
					if err := w.MulVec(out, x); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(w.Data)+len(w.Scales))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}
