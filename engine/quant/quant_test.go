package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	_ "github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

func values(t *testing.T, x *tensors.Tensor) []float32 {
	t.Helper()
	var out []float32
	if err := x.ConstFlatData(func(a any) { out = append(out, a.([]float32)...) }); err != nil {
		t.Fatal(err)
	}
	return out
}

// anyFloats reads a Float32 or BFloat16 tensor as float32.
func anyFloats(t *testing.T, x *tensors.Tensor) []float32 {
	t.Helper()
	out, err := floats(x)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func randomWeight(seed uint64, shape ...int) ([]float32, *tensors.Tensor) {
	r := rand.New(rand.NewPCG(seed, 1))
	n := 1
	for _, d := range shape {
		n *= d
	}
	w := make([]float32, n)
	for i := range w {
		w[i] = float32(r.NormFloat64() * 0.05)
		if i%97 == 0 {
			w[i] *= 8 // outliers
		}
	}
	return w, tensors.FromFlatDataAndDimensions(w, shape...)
}

// TestRoundTripBounds: every dequantized value is within half a step of the original
// (step = the group's scale), and the relative RMS error is small.
func TestRoundTripBounds(t *testing.T) {
	cases := []struct {
		spec   Spec
		shape  []int
		maxRel float64 // bound on RMS error / RMS weight (the weights have 8× outliers)
	}{
		{Int8, []int{48, 64}, 0.02},
		{Int8, []int{4, 24, 64}, 0.02},
		{Int4, []int{48, 64}, 0.2},
		{Int4, []int{4, 24, 96}, 0.2},
		{Int4F32, []int{48, 64}, 0.2},
		{Spec{Bits: 8, GroupSize: 32}, []int{8, 64}, 0.02},
		{Spec{Bits: 8, BF16Scales: true}, []int{8, 64}, 0.02},
	}
	for _, c := range cases {
		t.Run(c.spec.String(), func(t *testing.T) {
			w, wt := randomWeight(1, c.shape...)
			qw, qs, err := Quantize(wt, c.spec)
			if err != nil {
				t.Fatal(err)
			}
			wantW, wantS := c.spec.Shapes(c.shape)
			if !slices.Equal(qw.Shape().Dimensions, wantW) || !slices.Equal(qs.Shape().Dimensions, wantS) || qw.DType() != c.spec.DType() {
				t.Fatalf("stored %s %s, want %v %v", qw.Shape(), qs.Shape(), wantW, wantS)
			}
			back, err := Dequantize(qw, qs, c.spec, c.shape)
			if err != nil {
				t.Fatal(err)
			}
			if qs.DType() != c.spec.ScaleDType() {
				t.Fatalf("qscale dtype %s, want %s", qs.DType(), c.spec.ScaleDType())
			}
			d := values(t, back)
			scales := anyFloats(t, qs)
			n := c.shape[len(c.shape)-1]
			g := c.spec.group(n)
			var se, sw float64
			for i := range w {
				e := math.Abs(float64(d[i] - w[i]))
				if e > float64(scales[i/g])/2*1.0001+1e-12 {
					t.Fatalf("element %d: %v → %v, error %v > half step %v", i, w[i], d[i], e, scales[i/g]/2)
				}
				se += e * e
				sw += float64(w[i]) * float64(w[i])
			}
			rel := math.Sqrt(se / sw)
			t.Logf("%s %v: relative RMS error %.4f, %d bytes → %d+%d", c.spec, c.shape, rel, 4*len(w), qw.Memory(), qs.Memory())
			if rel > c.maxRel {
				t.Errorf("relative RMS error %.4f > %.4f", rel, c.maxRel)
			}
		})
	}
}

func TestQuantizeEdgeCases(t *testing.T) {
	// Zero rows get scale 0 and dequantize to exact zeros; extremes map to ±maxQ.
	wt := tensors.FromFlatDataAndDimensions([]float32{0, 0, 0, 0, 1, -1, 0.5, 0}, 2, 4)
	for _, s := range []Spec{Int8, {Bits: 4, GroupSize: 4}} {
		qw, qs, err := Quantize(wt, s)
		if err != nil {
			t.Fatal(err)
		}
		back, _ := Dequantize(qw, qs, s, []int{2, 4})
		v := values(t, back)
		if v[0] != 0 || v[3] != 0 || v[4] != 1 || v[5] != -1 {
			t.Errorf("%s: %v", s, v)
		}
	}
	// BFloat16 input.
	bt := tensors.FromFlatDataAndDimensions([]bfloat16.BFloat16{bfloat16.FromFloat32(2), bfloat16.FromFloat32(-1)}, 1, 2)
	if _, _, err := Quantize(bt, Int8); err != nil {
		t.Error(err)
	}
	for _, c := range []struct {
		s     Spec
		shape []int
		want  string
	}{
		{Int4, []int{4, 40}, "group size 32 does not divide"},
		{Spec{Bits: 3}, []int{4, 32}, "unsupported quantization bits"},
		{Int8, []int{}, "scalar"},
	} {
		_, wt := randomWeight(2, c.shape...)
		if _, _, err := Quantize(wt, c.s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Quantize(%v, %s) = %v, want %q", c.shape, c.s, err, c.want)
		}
	}
	nan := tensors.FromFlatDataAndDimensions([]float32{float32(math.NaN()), 1}, 1, 2)
	if _, _, err := Quantize(nan, Int8); err == nil {
		t.Error("NaN quantized")
	}
}

func TestSpecOf(t *testing.T) {
	_, wt := randomWeight(3, 3, 8, 64)
	for _, s := range []Spec{Int8, Int4, Int4F32, {Bits: 8, BF16Scales: true}} {
		qw, qs, _ := Quantize(wt, s)
		got, err := SpecOf([]int{3, 8, 64}, qw.Shape(), qs.Shape())
		if err != nil || got != s {
			t.Errorf("SpecOf = %v, %v; want %v", got, err, s)
		}
		if _, err := SpecOf([]int{3, 8, 128}, qw.Shape(), qs.Shape()); err == nil {
			t.Errorf("%s: wrong logical shape accepted", s)
		}
		if s.Bits == 8 {
			if _, err := SpecOf([]int{3, 8, 64}, qw.Shape(), qs.Shape(), qs.Shape()); err == nil {
				t.Errorf("%s: a qmin with an Int8 qweight accepted", s)
			}
		}
	}
	// Affine: the qmin's presence marks the format; it must match qscale.
	for _, s := range []Spec{Int4Affine, {Bits: 4, GroupSize: 32, Format: Affine, BF16Scales: true}} {
		qw, qs, qm, err := QuantizeAffine(wt, s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := SpecOf([]int{3, 8, 64}, qw.Shape(), qs.Shape(), qm.Shape())
		if err != nil || got != s {
			t.Errorf("SpecOf = %v, %v; want %v", got, err, s)
		}
		if got, _ := SpecOf([]int{3, 8, 64}, qw.Shape(), qs.Shape()); got.Format != Int {
			t.Errorf("without qmin: %v, want symmetric int4", got)
		}
		other := shapes.Make(dtypes.Float32, qs.Shape().Dimensions...)
		if s.BF16Scales {
			other = shapes.Make(dtypes.BFloat16, 3, 8, 1)
		} else {
			other.DType = dtypes.BFloat16
		}
		if _, err := SpecOf([]int{3, 8, 64}, qw.Shape(), qs.Shape(), other); err == nil || !strings.Contains(err.Error(), "qmin") {
			t.Errorf("%s: mismatched qmin %s accepted (%v)", s, other, err)
		}
		if _, _, err := Quantize(wt, s); err == nil {
			t.Errorf("Quantize(%s) accepted", s)
		}
	}
	if _, err := SpecOf([]int{2, 64}, shapes.Make(dtypes.Uint8, 2, 32), shapes.Make(dtypes.Int32, 2, 2)); err == nil {
		t.Error("Int32 qscale accepted")
	}
}

func TestProfiles(t *testing.T) {
	for _, c := range []struct {
		p     Profile
		name  string
		shape []int
		q     bool
		want  Spec
		ok    bool
	}{
		{Int4Profile, "layers.0.experts.gate_up_proj", []int{128, 1408, 2816}, true, Int4, true},
		{Int4Profile, "layers.0.experts.down_proj", []int{128, 2816, 704}, true, Int4, true},
		{Int4Profile, "layers.0.self_attn.q_proj.weight", []int{4096, 2816}, true, Int8, true},
		{Int4Profile, "embed_tokens.weight", []int{262144, 2816}, true, Int8, true},
		{Int4Profile, "layers.0.experts.down_proj", []int{4, 8, 40}, true, Int8, true}, // 32 ∤ 40
		{Int8Profile, "layers.0.experts.down_proj", []int{128, 2816, 704}, true, Int8, true},
		{Int8Profile, "layers.0.router.proj.weight", []int{128, 2816}, false, Spec{}, false},
		{Int8Profile, "norm.weight", []int{2816}, false, Spec{}, false},
		{BF16Profile, "layers.0.self_attn.q_proj.weight", []int{4096, 2816}, true, Spec{}, false},
	} {
		got, ok := c.p.SpecFor(c.name, c.shape, c.q)
		if got != c.want || ok != c.ok {
			t.Errorf("%s.SpecFor(%s) = %v %v, want %v %v", c.p, c.name, got, ok, c.want, c.ok)
		}
	}
	if _, err := ParseProfile("INT4"); err != nil {
		t.Error(err)
	}
	if _, err := ParseProfile("q4_k_m"); err == nil {
		t.Error("unknown profile accepted")
	}
}

// TestDequantizeGraph: the graph function on the go backend equals host Dequantize
// exactly.
func TestDequantizeGraph(t *testing.T) {
	backend, err := backends.NewWithConfig("go:ops_sequential") // as engine/backend runs it: simplego's parallel ops race and can deadlock
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Finalize()
	for _, c := range []struct {
		spec  Spec
		shape []int
	}{
		{Int8, []int{24, 64}},
		{Int8, []int{3, 16, 64}},
		{Int4, []int{24, 64}},
		{Int4, []int{3, 16, 96}},
		{Int4F32, []int{24, 64}},
		{Spec{Bits: 8, BF16Scales: true}, []int{24, 64}},
		{Spec{Bits: 4, GroupSize: 0}, []int{5, 10}},
		{Int4Affine, []int{24, 64}},
		{Int4Affine, []int{3, 16, 96}},
		{Spec{Bits: 4, GroupSize: 32, Format: Affine, BF16Scales: true}, []int{3, 16, 96}},
	} {
		t.Run(c.spec.String(), func(t *testing.T) {
			_, wt := randomWeight(4, c.shape...)
			var qw, qs, qm *tensors.Tensor
			var err error
			var mins []*tensors.Tensor
			if c.spec.HasMin() {
				qw, qs, qm, err = QuantizeAffine(wt, c.spec)
				mins = []*tensors.Tensor{qm}
			} else {
				qw, qs, err = Quantize(wt, c.spec)
			}
			if err != nil {
				t.Fatal(err)
			}
			host, err := Dequantize(qw, qs, c.spec, c.shape, mins...)
			if err != nil {
				t.Fatal(err)
			}
			var exec *Exec
			if c.spec.HasMin() {
				exec, err = NewExec(backend, func(q, s, m *Node) *Node { return DequantizeGraph(q, s, c.spec, c.shape, m) })
			} else {
				exec, err = NewExec(backend, func(q, s *Node) *Node { return DequantizeGraph(q, s, c.spec, c.shape) })
			}
			if err != nil {
				t.Fatal(err)
			}
			args := []any{qw, qs}
			if qm != nil {
				args = append(args, qm)
			}
			got, err := exec.Exec1(args...)
			if err != nil {
				t.Fatal(err)
			}
			if got.DType() != dtypes.Float32 || !slices.Equal(got.Shape().Dimensions, c.shape) {
				t.Fatalf("graph output %s, want Float32%v", got.Shape(), c.shape)
			}
			a, b := values(t, host), values(t, got)
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("element %d: graph %v, host %v", i, b[i], a[i])
				}
			}

			// DequantizeNode on rows gathered along the first axis (as engine/model
			// does for experts and embeddings) equals the same rows of the host result.
			cols := c.shape[len(c.shape)-1]
			rowSize := len(a) / c.shape[0]
			idx := tensors.FromFlatDataAndDimensions([]int32{2, 0, 2}, 3, 1)
			var exec2 *Exec
			if c.spec.HasMin() {
				exec2, err = NewExec(backend, func(q, s, m, i *Node) *Node {
					return DequantizeNode(Gather(q, i), Gather(s, i), cols, Gather(m, i))
				})
			} else {
				exec2, err = NewExec(backend, func(q, s, i *Node) *Node { return DequantizeNode(Gather(q, i), Gather(s, i), cols) })
			}
			if err != nil {
				t.Fatal(err)
			}
			rows, err := exec2.Exec1(append(args, idx)...)
			if err != nil {
				t.Fatal(err)
			}
			r := values(t, rows)
			for k, row := range []int{2, 0, 2} {
				for j := 0; j < rowSize; j++ {
					if r[k*rowSize+j] != a[row*rowSize+j] {
						t.Fatalf("gathered row %d element %d: %v, want %v", row, j, r[k*rowSize+j], a[row*rowSize+j])
					}
				}
			}
		})
	}
}

// TestQuantizeBF16Rows: BF16 rows quantized in place give exactly Quantize's codes and
// scales for the matrix widened to float32 (int8 per row, int8 in groups of 32), the
// rows split among workers; a NaN is an error naming its index, and other formats are
// refused.
func TestQuantizeBF16Rows(t *testing.T) {
	const rows, cols = 1031, 96
	w, _ := randomWeight(7, rows, cols)
	src := make([]byte, 2*len(w))
	wide := make([]float32, len(w))
	for i, v := range w {
		b := RoundBF16(v)
		src[2*i], src[2*i+1] = byte(b), byte(b>>8)
		wide[i] = b.Float32()
	}
	for _, s := range []Spec{Int8, {Bits: 8, GroupSize: 32}} {
		qw, qs, err := Quantize(tensors.FromFlatDataAndDimensions(wide, rows, cols), s)
		if err != nil {
			t.Fatal(err)
		}
		q, scales := make([]int8, rows*cols), make([]float32, rows*cols/s.group(cols))
		if err := QuantizeBF16Rows(q, scales, src, cols, s); err != nil {
			t.Fatal(err)
		}
		if want := tensors.MustCopyFlatData[int8](qw); !slices.Equal(q, want) {
			t.Errorf("%s: codes differ from Quantize's", s)
		}
		if want := values(t, qs); !slices.Equal(scales, want) {
			t.Errorf("%s: scales differ from Quantize's", s)
		}
	}
	bad := slices.Clone(src)
	bad[2*(500*cols+3)], bad[2*(500*cols+3)+1] = 0xc0, 0x7f // NaN
	if err := QuantizeBF16Rows(make([]int8, rows*cols), make([]float32, rows), bad, cols, Int8); err == nil || !strings.Contains(err.Error(), "index 48003") {
		t.Errorf("NaN: %v", err)
	}
	for _, s := range []Spec{Int4, {Bits: 8, BF16Scales: true}, NVFP4} {
		if err := QuantizeBF16Rows(make([]int8, rows*cols), make([]float32, rows), src, cols, s); err == nil {
			t.Errorf("%s: quantized", s)
		}
	}
}

// BenchmarkQuantize: Quantize of a [2816, 2816] float32 weight (a 26B attention
// projection's size) to int8 per row and to int4 in groups of 32; weights/s.
func BenchmarkQuantize(b *testing.B) {
	_, w := randomWeight(3, 2816, 2816)
	for _, s := range []Spec{Int8, Int4} {
		b.Run(s.String(), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := Quantize(w, s); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(2816*2816*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gweights/s")
		})
	}
}

// TestRoundEven: roundEven is math.RoundToEven of the float32 widened, for every
// float32 from −2²² to 2²² whose exponent the quantizer can meet: each integer and
// half-integer below 300, and random values at every magnitude below 2²².
func TestRoundEven(t *testing.T) {
	check := func(x float32) {
		if got, want := roundEven(x), float32(math.RoundToEven(float64(x))); got != want || math.Signbit(float64(got)) != math.Signbit(float64(want)) && got != 0 {
			t.Fatalf("roundEven(%v) = %v, want %v", x, got, want)
		}
	}
	for i := -600; i <= 600; i++ {
		check(float32(i) / 2)
		check(math.Nextafter32(float32(i)/2, 1000))
		check(math.Nextafter32(float32(i)/2, -1000))
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 1_000_000 {
		x := math.Float32frombits(rng.Uint32() & 0x7fffffff)
		if x > 1<<22 || x != x {
			continue
		}
		check(x)
		check(-x)
	}
}

// BenchmarkQuantizeBF16Rows: a BF16 embedding's rows (4,096 of the 26B's 2,816) to
// int8 with a scale per row, as NVIDIA's NVFP4 export's embedding is held; weights/s.
func BenchmarkQuantizeBF16Rows(b *testing.B) {
	const rows, cols = 4096, 2816
	rng := rand.New(rand.NewPCG(5, 6))
	src := make([]byte, 2*rows*cols)
	for i := 0; i < len(src); i += 2 {
		binary.LittleEndian.PutUint16(src[i:], uint16(RoundBF16(float32(rng.NormFloat64()))))
	}
	q, scales := make([]int8, rows*cols), make([]float32, rows)
	for b.Loop() {
		if err := QuantizeBF16Rows(q, scales, src, cols, Int8); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(rows*cols*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gweights/s")
}

// TestMaxAbsBits: maxAbsBits is the largest magnitude's bits at every length (its
// four chains and its tail), with an infinity or a NaN anywhere coming out ≥ 0x7f800000.
func TestMaxAbsBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for n := range 13 {
		for at := range n {
			vals := make([]float32, n)
			for i := range vals {
				vals[i] = float32(rng.NormFloat64())
			}
			vals[at] = -9 // the largest magnitude, negative, at each place
			if got := maxAbsBits(vals); got != math.Float32bits(9) {
				t.Fatalf("n %d, -9 at %d: %#x, want %#x", n, at, got, math.Float32bits(9))
			}
			for _, bad := range []float32{float32(math.Inf(-1)), float32(math.NaN())} {
				vals[at] = bad
				if got := maxAbsBits(vals); got < 0x7f800000 {
					t.Fatalf("n %d, %v at %d: %#x", n, bad, at, got)
				}
			}
		}
	}
}
