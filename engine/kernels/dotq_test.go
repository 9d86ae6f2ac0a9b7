package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
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

// TestDotInt8Rows: the fused int8 dot is bit for bit dot on the decoded values, 1 to 3
// rows at a time, on lengths with and without a tail past the vector code's 32, and
// within float32 rounding of the float64 product; under noasm it is the Go code's.
func TestDotInt8Rows(t *testing.T) {
	vectorPaths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(23, 24))
		for _, k := range []int{1, 7, 33, 257, 4097} {
			for _, rows := range []int{1, 2, 3} {
				x := randWeights(rng, k)
				codes := make([]byte, rows*k)
				for i := range codes {
					codes[i] = byte(rng.Uint32())
				}
				codes[0] = 0x80 // −128, the one code the quantizer never writes
				scales := []float32{-0.0173, 0.031, 1e-3}[:rows]
				got, tail := make([]float32, rows), make([]float32, k)
				dotInt8Rows(got, x, codes, scales, tail)
				values := make([]float32, k)
				for j := range rows {
					decodeInt8(values, codes[j*k:(j+1)*k], scales[j])
					checkDot(t, fmt.Sprintf("k=%d, row %d of %d: dotInt8Rows", k, j, rows), got[j], values, x)
				}
			}
		}
	})
}

// TestDotInt8Groups: int8 in groups of 32 or a multiple, a scale per 32 values, fused:
// bit for bit dot on the decoded values, 1 to 3 rows at a time.
func TestDotInt8Groups(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2: grouped int8 rows are decoded")
	}
	rng := rand.New(rand.NewPCG(25, 26))
	for _, k := range []int{32, 96, 4096} {
		for _, rows := range []int{1, 2, 3} {
			x := randWeights(rng, k)
			codes := make([]byte, rows*k)
			for i := range codes {
				codes[i] = byte(rng.Uint32())
			}
			scales := randWeights(rng, rows*k/32)
			got := make([]float32, rows)
			if !dotInt8Groups(got, x, codes, scales) {
				t.Fatal("dotInt8Groups refused AVX2 input")
			}
			values := make([]float32, k)
			for j := range rows {
				for c := range k / 32 {
					decodeInt8(values[32*c:32*(c+1)], codes[j*k+32*c:j*k+32*(c+1)], scales[j*k/32+c])
				}
				checkDot(t, fmt.Sprintf("k=%d, row %d of %d: dotInt8Groups", k, j, rows), got[j], values, x)
			}
		}
	}
	if dotInt8Groups(make([]float32, 1), make([]float32, 48), make([]byte, 48), make([]float32, 2)) {
		t.Error("dotInt8Groups took a row of 48, not whole 32s")
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
