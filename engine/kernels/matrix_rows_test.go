package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestMatrixRowsAndMulNN: for every stored format, RowRange is the same rows as the
// whole matrix (its products equal the reference rows'), DecodeRow equals the owner's
// decoder, and MulNN (a·w) equals the float64 product, on shapes that are not
// multiples of the micro-tile, the packing blocks or the panel width, and that split
// over several workers. The float path (TestMulNTInt takes RowRange through the
// integer one).
func TestMatrixRowsAndMulNN(t *testing.T) {
	withQPath(t, nil, func() { testMatrixRowsAndMulNN(t) })
}

func testMatrixRowsAndMulNN(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, f := range formats {
		for _, c := range [][3]int{{1, 5, 2}, {3, 40, 96}, {17, 300, 544}, {9, 70, 2080}} {
			m, n, k := c[0], c[1], c[2]
			k = max(f.block, k/f.block*f.block)
			t.Run(fmt.Sprintf("%s/%dx%dx%d", f.name, m, n, k), func(t *testing.T) {
				tm := f.make(t, rng, n, k)
				row := make([]float32, k)
				for _, r := range []int{0, n / 2, n - 1} {
					if err := tm.w.DecodeRow(row, r); err != nil {
						t.Fatal(err)
					}
					for j, v := range row {
						if v != tm.want[r*k+j] {
							t.Fatalf("row %d col %d: %v, want %v", r, j, v, tm.want[r*k+j])
						}
					}
				}
				r0, r1 := n/3, n-n/4
				sub, err := tm.w.RowRange(r0, r1)
				if err != nil {
					t.Fatal(err)
				}
				a := randWeights(rng, m*k)
				out := randWeights(rng, m*(r1-r0))
				if err := sub.MulNT(out, a, m); err != nil {
					t.Fatal(err)
				}
				checkProduct(t, out, a, tm.want[r0*k:r1*k], m, r1-r0, k)

				// a·w against the product with wᵀ: a [m, n] times w [n, k].
				wt := make([]float32, k*n)
				for i := range n {
					for j := range k {
						wt[j*n+i] = tm.want[i*k+j]
					}
				}
				an := randWeights(rng, m*n)
				nn := randWeights(rng, m*k)
				if err := tm.w.MulNN(nn, an, m); err != nil {
					t.Fatal(err)
				}
				checkProduct(t, nn, an, wt, m, k, n)
			})
		}
	}
}

// TestMatrixRowsDamaged: the new entry points refuse a damaged matrix and bad ranges
// with an error, as the products do.
func TestMatrixRowsDamaged(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	tm := quantMatrixFor(t, rng)
	bad := *tm.w
	bad.Data = bad.Data[:len(bad.Data)-1]
	if _, err := bad.RowRange(0, 1); err == nil {
		t.Error("RowRange of a truncated matrix: no error")
	}
	if err := bad.DecodeRow(make([]float32, bad.Cols), 0); err == nil {
		t.Error("DecodeRow of a truncated matrix: no error")
	}
	if err := bad.MulNN(make([]float32, bad.Cols), make([]float32, bad.Rows), 1); err == nil {
		t.Error("MulNN of a truncated matrix: no error")
	}
	if _, err := tm.w.RowRange(2, tm.w.Rows+1); err == nil {
		t.Error("RowRange past the last row: no error")
	}
	if err := tm.w.DecodeRow(make([]float32, tm.w.Cols), tm.w.Rows); err == nil {
		t.Error("DecodeRow past the last row: no error")
	}
}

func quantMatrixFor(t *testing.T, rng *rand.Rand) testMatrix {
	for _, f := range formats {
		if f.name == "int4" {
			return f.make(t, rng, 8, 64)
		}
	}
	t.Fatal("no int4 format under test")
	return testMatrix{}
}
