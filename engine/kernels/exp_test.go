package kernels

import (
	"math"
	"testing"
)

// TestExpShift: the vector and scalar exponentials against float64 math, sums included,
// with −∞ inputs (masked attention scores) giving (almost) zero.
func TestExpShift(t *testing.T) {
	var src []float32
	for x := -90.0; x < 89; x += 0.0371 {
		src = append(src, float32(x))
	}
	src = append(src, float32(math.Inf(-1)), 0, 1, -1, 3) // odd tail
	for _, c := range []struct{ shift, scale float32 }{{0, 1}, {2.5, 0.7}, {-1, 1.3}, {89, 1}} {
		dst := make([]float32, len(src))
		sum := ExpShift(dst, src, c.shift, c.scale)
		var want64 float64
		for i, x := range src {
			arg := float64((x - c.shift) * c.scale)
			want := math.Exp(min(max(arg, -87.3365447504), 88.3762626647949))
			want64 += float64(dst[i])
			if math.IsInf(float64(dst[i]), 0) || math.IsNaN(float64(dst[i])) {
				t.Fatalf("exp(%g) = %g, want finite", arg, dst[i])
			}
			if arg < -87 || arg > 88 { // clamped range ends: finite is all that is promised
				continue
			}
			if e := math.Abs(float64(dst[i])-want) / want; e > 1e-6 {
				t.Fatalf("exp(%g) = %g, want %g (rel %.2e)", arg, dst[i], want, e)
			}
			if s := Expf(float32(arg)); math.Abs(float64(s)-want)/want > 1e-6 {
				t.Fatalf("Expf(%g) = %g, want %g", arg, s, want)
			}
		}
		if want64 < 1e37 && math.Abs(float64(sum)-want64)/want64 > 1e-5 { // float32 sums overflow past that
			t.Errorf("sum %g, want %g", sum, want64)
		}
	}
}

// TestSoftCap: SoftCap against float64 c·tanh(x/c), and bit for bit against the two
// passes it replaces (ExpShift over |x|, then c·(1 − e)/(1 + e) with x's sign), on
// lengths with and without a scalar tail.
func TestSoftCap(t *testing.T) {
	for _, n := range []int{1, 7, 8, 33, 1000} {
		row := make([]float32, n)
		for i := range row {
			row[i] = float32(math.Sin(float64(i)*1.7)) * float32(i%40)
		}
		if n > 3 {
			row[0], row[1], row[2] = 0, float32(math.Inf(1)), float32(math.Inf(-1))
		}
		const c = 30
		got := append([]float32(nil), row...)
		SoftCap(got, c)
		two := make([]float32, n)
		for i, x := range row {
			two[i] = max(x, -x)
		}
		ExpShift(two, two, 0, -2.0/c)
		for i, x := range row {
			e := two[i]
			w := c * (1 - e) / (1 + e)
			if x < 0 {
				w = -w
			}
			if got[i] != w {
				t.Fatalf("n=%d: SoftCap(%g) = %g, the two passes give %g", n, x, got[i], w)
			}
			if ref := c * math.Tanh(float64(x)/c); math.Abs(float64(got[i])-ref) > 2e-6*c {
				t.Fatalf("n=%d: SoftCap(%g) = %g, want %g", n, x, got[i], ref)
			}
		}
	}
	row := []float32{1, -2, 3}
	SoftCap(row, 0)
	if row[0] != 1 || row[1] != -2 || row[2] != 3 {
		t.Fatalf("c = 0 changed the row: %v", row)
	}
}

func BenchmarkSoftCap(b *testing.B) {
	row := make([]float32, 4096)
	for i := range row {
		row[i] = float32(i%97) - 48
	}
	for b.Loop() {
		SoftCap(row, 30)
	}
	b.ReportMetric(float64(len(row))*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gvalues/s")
}

// TestSoftmax: Softmax bit for bit against the scalar passes it replaces (max, ExpShift,
// times the reciprocal of the sum), sums to 1, and in place.
func TestSoftmax(t *testing.T) {
	for _, n := range []int{1, 7, 8, 9, 100, 4099} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(math.Sin(float64(i)*2.3)) * 9
		}
		x[n/2] = 11 // the maximum away from the start
		want := make([]float32, n)
		m := x[0]
		for _, v := range x {
			if v > m {
				m = v
			}
		}
		r := 1 / ExpShift(want, x, m, 1/0.7)
		for j := range want {
			want[j] *= r
		}
		got := make([]float32, n)
		Softmax(got, x, 1/0.7)
		var sum float64
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("n=%d: [%d] = %g, want %g", n, i, got[i], want[i])
			}
			sum += float64(got[i])
		}
		if math.Abs(sum-1) > 1e-5 {
			t.Fatalf("n=%d: sums to %g", n, sum)
		}
		Softmax(x, x, 1/0.7)
		for i := range x {
			if x[i] != want[i] {
				t.Fatalf("n=%d in place: [%d] = %g, want %g", n, i, x[i], want[i])
			}
		}
	}
}
