package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
)

// tensorBytes is a stored tensor's little-endian bytes, as a file holds them.
func tensorBytes(t testing.TB, x *tensors.Tensor) []byte {
	t.Helper()
	var b []byte
	err := x.ConstFlatData(func(flat any) {
		switch v := flat.(type) {
		case []int8:
			for _, c := range v {
				b = append(b, byte(c))
			}
		case []uint8:
			b = append(b, v...)
		case []float32:
			for _, f := range v {
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
			}
		case []bfloat16.BFloat16:
			for _, f := range v {
				b = binary.LittleEndian.AppendUint16(b, uint16(f))
			}
		default:
			t.Fatalf("tensor of %T", flat)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testMatrix is a weight in one stored format and the float32 weights its owner's
// decoder (engine/quant's Dequantize, engine/gguf's) gives for it: the reference.
type testMatrix struct {
	w    *Matrix
	want []float32
}

// formats are the stored formats under test, by name, each building an n×k matrix from
// random weights.
var formats = []struct {
	name  string
	block int // k must be a multiple
	make  func(t testing.TB, rng *rand.Rand, n, k int) testMatrix
}{
	{"f32", 1, ggufMatrix(gguf.F32)},
	{"f16", 1, ggufMatrix(gguf.F16)},
	{"bf16", 1, ggufMatrix(gguf.BF16)},
	{"q8_0", 32, ggufMatrix(gguf.Q8_0)},
	{"q4_0", 32, ggufMatrix(gguf.Q4_0)},
	{"q4_1", 32, ggufMatrix(gguf.Q4_1)},
	{"q5_0", 32, ggufMatrix(gguf.Q5_0)},
	{"q5_1", 32, ggufMatrix(gguf.Q5_1)},
	{"q4_k", 256, ggufMatrix(gguf.Q4_K)},
	{"q5_k", 256, ggufMatrix(gguf.Q5_K)},
	{"q6_k", 256, ggufMatrix(gguf.Q6_K)},
	{"q2_k", 256, ggufMatrix(gguf.Q2_K)},
	{"q3_k", 256, ggufMatrix(gguf.Q3_K)},
	{"iq4_nl", 32, ggufMatrix(gguf.IQ4_NL)},
	{"iq4_xs", 256, ggufMatrix(gguf.IQ4_XS)},
	{"int8", 1, quantMatrix(quant.Int8)},
	{"int8-bf16", 1, quantMatrix(quant.Spec{Bits: 8, BF16Scales: true})},
	{"int4", 32, quantMatrix(quant.Int4)},
	{"int4-f32", 32, quantMatrix(quant.Int4F32)},
	{"int4-row", 2, quantMatrix(quant.Spec{Bits: 4})},
	{"int4-affine", 32, quantMatrix(quant.Int4Affine)},
	{"int4-affine-bf16", 32, quantMatrix(quant.Spec{Bits: 4, GroupSize: 32, Format: quant.Affine, BF16Scales: true})},
	{"nvfp4", 16, nvfp4Matrix},
}

func randWeights(rng *rand.Rand, n int) []float32 {
	w := make([]float32, n)
	for i := range w {
		w[i] = float32(rng.NormFloat64() * 0.5)
	}
	return w
}

func ggufMatrix(typ gguf.Type) func(t testing.TB, rng *rand.Rand, n, k int) testMatrix {
	return func(t testing.TB, rng *rand.Rand, n, k int) testMatrix {
		data, err := gguf.Quantize(typ, randWeights(rng, n*k))
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float32, n*k)
		if err := gguf.Dequantize(typ, data, want); err != nil {
			t.Fatal(err)
		}
		return testMatrix{&Matrix{Rows: n, Cols: k, GGUF: typ, Data: data}, want}
	}
}

func quantMatrix(spec quant.Spec) func(t testing.TB, rng *rand.Rand, n, k int) testMatrix {
	return func(t testing.TB, rng *rand.Rand, n, k int) testMatrix {
		x := tensors.FromFlatDataAndDimensions(randWeights(rng, n*k), n, k)
		var qw, qs, qm *tensors.Tensor
		var err error
		var mins []*tensors.Tensor
		if spec.HasMin() {
			qw, qs, qm, err = quant.QuantizeAffine(x, spec)
			mins = append(mins, qm)
		} else {
			qw, qs, err = quant.Quantize(x, spec)
		}
		if err != nil {
			t.Fatal(err)
		}
		w := &Matrix{Rows: n, Cols: k, Spec: spec, Data: tensorBytes(t, qw), Scales: tensorBytes(t, qs)}
		if qm != nil {
			w.Mins = tensorBytes(t, qm)
		}
		return testMatrix{w, dequantized(t, qw, qs, spec, n, k, mins...)}
	}
}

func dequantized(t testing.TB, qw, qs *tensors.Tensor, spec quant.Spec, n, k int, qmin ...*tensors.Tensor) []float32 {
	t.Helper()
	d, err := quant.Dequantize(qw, qs, spec, []int{n, k}, qmin...)
	if err != nil {
		t.Fatal(err)
	}
	var want []float32
	if err := d.ConstFlatData(func(flat any) { want = append(want, flat.([]float32)...) }); err != nil {
		t.Fatal(err)
	}
	return want
}

// nvfp4Matrix: random E2M1 codes, FP8 block-scale codes (no NaN) and a weight_scale_2
// per row, stored with quant.PutNVFP4ScaleRow (Darkroom loads NVFP4, it does not make it).
func nvfp4Matrix(t testing.TB, rng *rand.Rand, n, k int) testMatrix {
	codes := make([]byte, n*k/2)
	for i := range codes {
		codes[i] = byte(rng.IntN(256))
	}
	g := k / 16
	scales := nvfp4Scales(rng, n, k)
	qw := tensors.FromFlatDataAndDimensions(codes, n, k/2)
	qs := tensors.FromFlatDataAndDimensions(scales, n, g+quant.NVFP4ScaleBytes)
	return testMatrix{
		&Matrix{Rows: n, Cols: k, Spec: quant.NVFP4, Data: codes, Scales: scales},
		dequantized(t, qw, qs, quant.NVFP4, n, k),
	}
}

// nvfp4Scales is n qscale rows for k columns: FP8 block-scale codes 2^-3 … 2^2.9
// (positive, no NaN) and a weight_scale_2 each.
func nvfp4Scales(rng *rand.Rand, n, k int) []byte {
	g := k / 16
	scales := make([]byte, n*(g+quant.NVFP4ScaleBytes))
	fp8 := make([]byte, g)
	for r := range n {
		for i := range fp8 {
			fp8[i] = byte(0x20 + rng.IntN(0x30))
		}
		_ = quant.PutNVFP4ScaleRow(scales[r*(g+4):(r+1)*(g+4)], fp8, float32(rng.Float64()*0.01+1e-3)) // (valid: no error)
	}
	return scales
}

// checkProduct compares out [m, n] with the float64 product a·wantᵀ, within float32
// rounding of the sum of |terms|.
func checkProduct(t *testing.T, out, a, want []float32, m, n, k int) {
	t.Helper()
	for i := range m {
		for j := range n {
			var s, abs float64
			for p := range k {
				v := float64(a[i*k+p]) * float64(want[j*k+p])
				s += v
				abs += math.Abs(v)
			}
			if got := float64(out[i*n+j]); math.Abs(got-s) > 2e-6*abs+1e-30 || math.IsNaN(got) {
				t.Fatalf("out[%d, %d] = %g, want %g (Σ|terms| %g)", i, j, got, s, abs)
			}
		}
	}
}

// TestMatrixProducts: every stored format's MulVec (m = 1) and MulNT against the
// float64 product with the weights its owner's decoder gives, on row counts and depths
// that are not multiples of the micro-tile or the packing blocks (KC 256), and a row
// longer than one pass of the AR product's Q4_K blocks (q4kRowBlocks), out starting as
// garbage. The float path: the integer one rounds a (TestMulNTInt).
func TestMatrixProducts(t *testing.T) {
	withQPath(t, nil, func() { testMatrixProducts(t) })
}

func testMatrixProducts(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, f := range formats {
		for _, c := range [][3]int{{1, 1, 1}, {3, 7, 2}, {2, 33, 96}, {1, 257, 288}, {17, 33, 544}, {33, 70, 4640}, {40, 257, 768}, {1, 3, 16640}} {
			m, n, k := c[0], c[1], c[2]
			k = max(f.block, k/f.block*f.block)
			t.Run(fmt.Sprintf("%s/%dx%dx%d", f.name, m, n, k), func(t *testing.T) {
				tm := f.make(t, rng, n, k)
				a := randWeights(rng, m*k)
				out := randWeights(rng, m*n)
				if err := tm.w.MulNT(out, a, m); err != nil {
					t.Fatal(err)
				}
				checkProduct(t, out, a, tm.want, m, n, k)
				if m == 1 {
					return
				}
				vec := randWeights(rng, n)
				if err := tm.w.MulVec(vec, a[:k]); err != nil {
					t.Fatal(err)
				}
				checkProduct(t, vec, a[:k], tm.want, 1, n, k)
			})
		}
	}
}

// TestMatrixMatchesFloat32: a stored matrix's products are bit for bit MulNT's on the
// float32 weights its owner's decoder gives (the host model's twin test relies on it),
// rows longer than 4096 included; ggml's 4-bit types sum the AR step's products their
// own way (matrix_dot.go), as Q4_1's and Q5_1's (int8Blocks), and are only held to
// the reference there. {1, 1001, 2048}
// is split into parts that start at odd rows (the int4 kernels take two rows at a
// time); {3, 5, 100} leaves a row tail past the vector code's 32. The float path, as
// TestMatrixProducts.
func TestMatrixMatchesFloat32(t *testing.T) {
	withQPath(t, nil, func() { testMatrixMatchesFloat32(t) })
	if useAVX512 { // and as an AVX2 CPU runs them (the printer's block kernels: dotBlocks32)
		defer func(v bool) { useAVX512 = v }(useAVX512)
		useAVX512 = false
		withQPath(t, nil, func() { testMatrixMatchesFloat32(t) })
	}
}

func testMatrixMatchesFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, f := range formats {
		for _, c := range [][3]int{{1, 37, 4608}, {2, 9, 512}, {40, 70, 768}, {1, 300, 1024}, {1, 1001, 2048}, {3, 5, 100}} {
			m, n, k := c[0], c[1], c[2]
			k = max(f.block, k/f.block*f.block)
			tm := f.make(t, rng, n, k)
			a := randWeights(rng, m*k)
			got, want := make([]float32, m*n), make([]float32, m*n)
			if err := tm.w.MulNT(got, a, m); err != nil {
				t.Fatal(err)
			}
			MulNT(want, a, tm.want, m, n, k)
			if m < dotRows && (tm.w.nibbleHalf() > 0 || tm.w.affineBlocks32() && tm.w.int8Blocks()) {
				checkProduct(t, got, a, tm.want, m, n, k)
				continue
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s %dx%dx%d: out[%d] = %g, float32 MulNT %g", f.name, m, n, k, i, got[i], want[i])
				}
			}
		}
	}
}

// TestMatrixUnaligned: stored bytes at an odd address (a memory-mapped file need not
// align its tensors) multiply as well, F32's and bf16's included.
func TestMatrixUnaligned(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, f := range formats[:3] {
		tm := f.make(t, rng, 5, 40)
		buf := make([]byte, len(tm.w.Data)+1)
		w := *tm.w
		w.Data = buf[1:]
		copy(w.Data, tm.w.Data)
		a, out := randWeights(rng, 40*4), make([]float32, 5*4)
		if err := w.MulNT(out, a, 4); err != nil {
			t.Fatal(err)
		}
		checkProduct(t, out, a, tm.want, 4, 5, 40)
	}
}

// TestMatrixDamaged: a truncated tensor, a wrong scale count or a missing minimum is an
// error from Check, MulVec and MulNT, never a panic or a product of garbage.
func TestMatrixDamaged(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, f := range formats {
		const n = 5
		k := max(f.block, 64/f.block*f.block)
		tm := f.make(t, rng, n, k)
		damage := map[string]func(w *Matrix){
			"truncated data": func(w *Matrix) { w.Data = w.Data[:len(w.Data)-1] },
			"one row short":  func(w *Matrix) { w.Data = w.Data[:len(w.Data)*(n-1)/n] },
			"extra data":     func(w *Matrix) { w.Data = append(w.Data, 0) },
			"wrong shape":    func(w *Matrix) { w.Rows++ },
		}
		if tm.w.Spec.Bits != 0 {
			damage["scale missing"] = func(w *Matrix) { w.Scales = w.Scales[:len(w.Scales)-w.Spec.ScaleDType().Size()] }
			damage["scales absent"] = func(w *Matrix) { w.Scales = nil }
			if tm.w.Spec.HasMin() {
				damage["mins absent"] = func(w *Matrix) { w.Mins = nil }
			} else {
				damage["stray mins"] = func(w *Matrix) { w.Mins = w.Scales }
			}
		} else if f.block > 1 {
			damage["partial block"] = func(w *Matrix) { w.Cols-- }
		}
		for what, hurt := range damage {
			w := *tm.w
			w.Data = append([]byte(nil), w.Data...)
			hurt(&w)
			out := make([]float32, 4*(w.Rows+1))
			a := make([]float32, 4*(w.Cols+1))
			if err := w.Check(); err == nil {
				t.Errorf("%s, %s: Check accepted it", f.name, what)
			}
			if err := w.MulVec(out, a); err == nil {
				t.Errorf("%s, %s: MulVec accepted it", f.name, what)
			}
			if err := w.MulNT(out, a, 3); err == nil {
				t.Errorf("%s, %s: MulNT accepted it", f.name, what)
			}
		}
	}
	w := &Matrix{Rows: 2, Cols: 32, GGUF: gguf.IQ2_XXS, Data: make([]byte, 2*66)}
	if err := w.Check(); err == nil {
		t.Error("a ggml type without a decoder was accepted")
	}
}

// TestDecoders: the vector decoders against the portable ones, odd lengths included.
func TestDecoders(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{1, 7, 16, 33, 100, 1000} {
		src := make([]byte, 2*n)
		for i := range src {
			src[i] = byte(rng.IntN(256))
		}
		for i := 1; i < len(src); i += 2 {
			src[i] &= 0x7f // bf16 high bytes: finite
			if src[i]&0x7f == 0x7f {
				src[i] = 0x3f
			}
		}
		cases := []struct {
			name      string
			got, want func(dst []float32)
			len       int
		}{
			{"bf16", func(d []float32) { decodeBF16(d, src) }, func(d []float32) { decodeBF16Go(d, src) }, n},
			{"f16", func(d []float32) { decodeF16(d, src) }, func(d []float32) { decodeF16Go(d, src) }, n},
			{"int8", func(d []float32) { decodeInt8(d, src[:n], 0.37) }, func(d []float32) { decodeInt8Go(d, src[:n], 0.37) }, n},
			{"int4", func(d []float32) { decodeInt4(d, src[:n], -1.5) }, func(d []float32) { decodeInt4Go(d, src[:n], -1.5) }, 2 * n},
		}
		if g := n / 16; g > 0 {
			sm := randWeights(rng, 4*g)
			cases = append(cases, []struct {
				name      string
				got, want func(dst []float32)
				len       int
			}{
				{"int4 runs", func(d []float32) { decodeInt4Runs(d, src[:16*g], sm[:g], sm[g:2*g], 8) },
					func(d []float32) { decodeInt4RunsGo(d, src[:16*g], sm[:g], sm[g:2*g], 8) }, 32 * g},
				{"q8_0 blocks", func(d []float32) { decodeQ8Blocks(d, src[:34*(g/3)], sm[:g/3]) },
					func(d []float32) { decodeQ8BlocksGo(d, src[:34*(g/3)], sm[:g/3]) }, 32 * (g / 3)},
				{"e2m1 runs", func(d []float32) { decodeE2M1Runs(d, src[:8*g], sm[:g]) },
					func(d []float32) { decodeE2M1RunsGo(d, src[:8*g], sm[:g]) }, 16 * g},
				{"nibble runs", func(d []float32) { decodeNibbleRuns(d, src[:16*g], 16, 16, sm[:4*g], 0) },
					func(d []float32) { decodeNibbleRunsGo(d, src[:16*g], 16, 16, sm[:4*g], 0) }, 32 * g},
				{"nibble runs, strided", func(d []float32) { decodeNibbleRuns(d, src[:18*(g/2)], 16, 18, sm[:4*(g/2)], 8) },
					func(d []float32) { decodeNibbleRunsGo(d, src[:18*(g/2)], 16, 18, sm[:4*(g/2)], 8) }, 32 * (g / 2)},
			}...)
		}
		if n >= 105 {
			ds := (*[16]float32)(randWeights(rng, 16))
			cases = append(cases, struct {
				name      string
				got, want func(dst []float32)
				len       int
			}{"q6_k block", func(d []float32) { decodeQ6K(d, src[:210], ds) }, func(d []float32) { decodeQ6KGo(d, src[:210], ds) }, 256})
		}
		for _, c := range cases {
			got, want := make([]float32, c.len), make([]float32, c.len)
			c.got(got)
			c.want(want)
			for i := range got {
				// −0 (an E2M1 code 8) equals 0; an f16 NaN (these bytes hold some) is a NaN.
				bothNaN := math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i]))
				if got[i] != want[i] && !bothNaN {
					t.Fatalf("%s n=%d: [%d] = %g, want %g", c.name, n, i, got[i], want[i])
				}
			}
		}
		if g := n / 16; g >= 2 {
			x, scales := randWeights(rng, 32*g), randWeights(rng, 2*g)
			got := dotNibbleRuns(x, src[:16*g], 16, 16, scales)
			want := dotNibbleRunsGo(x, src[:16*g], 16, 16, scales)
			var abs float64
			for r := range g {
				for i := range 16 {
					abs += math.Abs(float64(src[16*r+i]&15) * float64(scales[2*r]) * float64(x[32*r+i]))
					abs += math.Abs(float64(src[16*r+i]>>4) * float64(scales[2*r+1]) * float64(x[32*r+16+i]))
				}
			}
			if math.Abs(float64(got-want)) > 1e-6*abs {
				t.Fatalf("dot of nibble runs, n=%d: %g, want %g", n, got, want)
			}
		}
		x, y := randWeights(rng, n), randWeights(rng, n)
		var want float64
		for i := range x {
			want += float64(x[i]) * float64(y[i])
		}
		if got := dot(x, y); math.Abs(float64(got)-want) > 1e-5*math.Sqrt(float64(n)) {
			t.Fatalf("dot n=%d = %g, want %g", n, got, want)
		}
	}
}

// BenchmarkMatrixMulVec: the AR product on a 26B-sized weight [2816, 2816] in each
// format; GB/s counts the stored bytes read (against this machine's memory rate).
func BenchmarkMatrixMulVec(b *testing.B) {
	const n, k = 2816, 2816
	for _, f := range formats {
		b.Run(f.name, func(b *testing.B) {
			tm := f.make(b, rand.New(rand.NewPCG(1, 1)), n, k)
			x, out := randWeights(rand.New(rand.NewPCG(2, 2)), k), make([]float32, n)
			bytes := len(tm.w.Data) + len(tm.w.Scales) + len(tm.w.Mins)
			for b.Loop() {
				if err := tm.w.MulVec(out, x); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(bytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkMatrixMulNT: the canvas product [256, 2816]×[2816, 704] (a 26B expert's
// shape) in each format.
func BenchmarkMatrixMulNT(b *testing.B) {
	const m, n, k = 256, 704, 2816
	for _, f := range formats {
		b.Run(f.name, func(b *testing.B) {
			tm := f.make(b, rand.New(rand.NewPCG(1, 1)), n, k)
			a, out := randWeights(rand.New(rand.NewPCG(2, 2)), m*k), make([]float32, m*n)
			for b.Loop() {
				if err := tm.w.MulNT(out, a, m); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkPeersGEMV is packaging/bench-peers.sh's memory-bound side: the AR step's
// product on weights far larger than the caches — bf16 and the int4 profile's format
// (int4 g32, bf16 scales) and int8, per row (the int4 profile's attention and head) and
// in groups of 32, random bytes of the right layout — in GB/s of stored bytes
// read, against the rate OpenBLAS's float32 GEMV reads memory at.
func BenchmarkPeersGEMV(b *testing.B) {
	const n, k = 32768, 4096
	rng := rand.New(rand.NewPCG(3, 3))
	randBytes := func(n int) []byte {
		s := make([]byte, n)
		for i := range s {
			s[i] = byte(rng.Uint32())
		}
		return s
	}
	bf16 := func(n int) []byte { // finite values of about unit size
		s := make([]byte, 2*n)
		for i := range n {
			binary.LittleEndian.PutUint16(s[2*i:], 0x3c00|uint16(rng.IntN(0x3ff)))
		}
		return s
	}
	f32 := func(n int) []byte { // scales of about 1/127
		s := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(s[4*i:], math.Float32bits(float32(1+rng.Float64())/127))
		}
		return s
	}
	for _, c := range []struct {
		name string
		w    *Matrix
	}{
		{"bf16", &Matrix{Rows: n, Cols: k, GGUF: gguf.BF16, Data: bf16(n * k)}},
		{"int4", &Matrix{Rows: n, Cols: k, Spec: quant.Int4, Data: randBytes(n * k / 2), Scales: bf16(n * k / 32)}},
		{"int8", &Matrix{Rows: n, Cols: k, Spec: quant.Int8, Data: randBytes(n * k), Scales: f32(n)}},
		{"int8g32", &Matrix{Rows: n, Cols: k, Spec: quant.Spec{Bits: 8, GroupSize: 32}, Data: randBytes(n * k), Scales: f32(n * k / 32)}},
		{"nvfp4", &Matrix{Rows: n, Cols: k, Spec: quant.NVFP4, Data: randBytes(n * k / 2), Scales: nvfp4Scales(rng, n, k)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			x, out := randWeights(rng, k), make([]float32, n)
			bytes := len(c.w.Data) + len(c.w.Scales)
			for b.Loop() {
				if err := c.w.MulVec(out, x); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(bytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// TestDotQ4KTable: the AR product's one-kernel Q4_K dot (headers decoded in
// registers: dotQ4KTable where q4kTabled, AVX-512's and AVX2's) equals the dot of engine/gguf's decoded values with x, on
// blocks of random bytes — every 6-bit scale and minimum, their high bits included —
// with random finite fp16 d and dmin of either sign, subnormals among them.
func TestDotQ4KTable(t *testing.T) {
	if !q4kTabled() {
		t.Skip("no Q4_K table kernel for this CPU (or build)")
	}
	rng := rand.New(rand.NewPCG(41, 42))
	for _, nb := range []int{1, 2, 11, 64, 65} {
		src := make([]byte, 144*nb)
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		for b := range nb {
			for _, o := range []int{0, 2} {
				v := float32(rng.NormFloat64()) * float32(math.Ldexp(1, -rng.IntN(20)))
				binary.LittleEndian.PutUint16(src[144*b+o:], gguf.Float32ToHalf(v))
			}
		}
		x := randWeights(rng, 256*nb)
		vals := make([]float32, 256*nb)
		if err := gguf.Dequantize(gguf.Q4_K, src, vals); err != nil {
			t.Fatal(err)
		}
		var want, mag float64
		for i, v := range vals {
			want += float64(v) * float64(x[i])
			mag += math.Abs(float64(v) * float64(x[i]))
		}
		check := func(what string, got float32) {
			if d := math.Abs(float64(got) - want); d > 1e-5*mag {
				t.Errorf("%s, %d blocks: %g, want %g (difference %.3g of Σ|v·x| %.3g)", what, nb, got, want, d, mag)
			}
		}
		for _, avx512 := range []bool{true, false} { // this CPU's kernel, then AVX2's
			if avx512 && !useAVX512 {
				continue
			}
			was := useAVX512
			useAVX512 = avx512
			if q4kTabled() {
				check(fmt.Sprintf("dotQ4KTable (AVX-512 %v)", avx512), dotQ4KTable(x, src, nb))
			}
			useAVX512 = was
		}
	}
}
