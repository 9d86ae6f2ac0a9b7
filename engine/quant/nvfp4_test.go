package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// e2m1Ref decodes an FP4 E2M1 code from its definition (1 sign bit, 2 exponent bits
// with bias 1, 1 mantissa bit; exponent 0 is subnormal: 0.m·2⁰), independently of the
// E2M1 table and of the graph's arithmetic.
func e2m1Ref(c uint8) float64 {
	e, m := float64(c>>1&3), float64(c&1)
	v := m * 0.5
	if e > 0 {
		v = math.Pow(2, e-1) * (1 + m/2)
	}
	if c&8 != 0 {
		v = -v
	}
	return v
}

func TestE2M1Table(t *testing.T) {
	want := []float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}
	for c := uint8(0); c < 16; c++ {
		if float64(E2M1[c]) != e2m1Ref(c) {
			t.Errorf("E2M1[%d] = %v, want %v", c, E2M1[c], e2m1Ref(c))
		}
		if math.Abs(e2m1Ref(c)) != want[c&7] {
			t.Errorf("code %d: |v| = %v, want %v", c, math.Abs(e2m1Ref(c)), want[c&7])
		}
	}
	// The block scales' FP8-E4M3 table, all 256 codes (0x7f and 0xff are NaN).
	for c := 0; c < 256; c++ {
		got := FP8E4M3(byte(c))
		if c&0x7f == 0x7f {
			if !math.IsNaN(float64(got)) {
				t.Errorf("fp8 %#02x = %v, want NaN", c, got)
			}
			continue
		}
		if float64(got) != fp8Ref(byte(c)) || math.Signbit(float64(got)) != (c&0x80 != 0) {
			t.Errorf("fp8 %#02x = %v, want %v", c, got, fp8Ref(byte(c)))
		}
	}
}

// fp8Ref decodes float8_e4m3fn from its definition (bias 7, subnormal m·2⁻⁹).
func fp8Ref(b byte) float64 {
	e, m := float64(b>>3&15), float64(b&7)
	v := m * math.Pow(2, -9)
	if e > 0 {
		v = math.Pow(2, e-7) * (1 + m/8)
	}
	if b&0x80 != 0 {
		v = -v
	}
	return v
}

// nvfp4Case is an NVFP4 weight in stored form plus, independently, its codes, block
// scale codes and per-row weight_scale_2.
type nvfp4Case struct {
	qw, qs *tensors.Tensor
	codes  []uint8   // packed E2M1 codes
	fp8    []uint8   // block-scale codes, [rows·groups]
	scale2 []float32 // per row
}

// randomNVFP4 builds an NVFP4 weight of logical shape with random codes, random
// non-NaN FP8 block scales and a weight_scale_2 per row drawn from scale2s.
func randomNVFP4(t *testing.T, seed uint64, scale2s []float32, shape ...int) nvfp4Case {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 2))
	n := 1
	for _, d := range shape {
		n *= d
	}
	cols := shape[len(shape)-1]
	rows, groups := n/cols, cols/16
	c := nvfp4Case{codes: make([]uint8, n/2), fp8: make([]uint8, rows*groups), scale2: make([]float32, rows)}
	for i := range c.codes {
		c.codes[i] = uint8(r.IntN(256))
	}
	packed := make([]uint8, rows*(groups+NVFP4ScaleBytes))
	for row := range rows {
		for j := range groups {
			b := uint8(r.IntN(256))
			if b&0x7f == 0x7f {
				b = 0x38 // 1.0 instead of NaN
			}
			c.fp8[row*groups+j] = b
		}
		c.scale2[row] = scale2s[row%len(scale2s)]
		w := groups + NVFP4ScaleBytes
		if err := PutNVFP4ScaleRow(packed[row*w:(row+1)*w], c.fp8[row*groups:(row+1)*groups], c.scale2[row]); err != nil {
			t.Fatal(err)
		}
	}
	qw, qs := NVFP4.Shapes(shape)
	c.qw, c.qs = tensors.FromFlatDataAndDimensions(c.codes, qw...), tensors.FromFlatDataAndDimensions(packed, qs...)
	return c
}

// want is element i's value from the definitions: float32(e2m1 · float32(fp8 ·
// scale2)), the block scale rounded to float32 first as ModelOpt computes it.
func (c nvfp4Case) want(i, cols int) float32 {
	code := c.codes[i/2] & 15
	if i%2 == 1 {
		code = c.codes[i/2] >> 4
	}
	row, col := i/cols, i%cols
	s := float32(fp8Ref(c.fp8[row*(cols/16)+col/16]) * float64(c.scale2[row]))
	return float32(e2m1Ref(code) * float64(s))
}

// TestNVFP4 checks host dequantization against the independent float64 formula
// (one float32 rounding of code·scale), the graph against the host (exactly), rows
// gathered like experts, and that SpecOf tells NVFP4 from int4 g16.
func TestNVFP4(t *testing.T) {
	backend, err := backends.NewWithConfig("go:ops_sequential") // as engine/backend runs it: simplego's parallel ops race and can deadlock
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Finalize()
	// weight_scale_2 values: ordinary, tiny, a float32 subnormal, zero, the largest
	// float32, and one with all mantissa bits set.
	scale2s := []float32{1.7e-4, 3e-9, math.Float32frombits(0x00012345), 0, math.MaxFloat32 / 1e3, math.Float32frombits(0x3a7fffff)}
	for _, shape := range [][]int{{24, 64}, {3, 16, 96}, {2, 32}} {
		c := randomNVFP4(t, uint64(len(shape)*shape[0]), scale2s, shape...)
		qw, qs := c.qw, c.qs
		spec, err := SpecOf(shape, qw.Shape(), qs.Shape())
		if err != nil || spec != NVFP4 {
			t.Fatalf("SpecOf(%v) = %v, %v; want %v", shape, spec, err, NVFP4)
		}
		host, err := Dequantize(qw, qs, NVFP4, shape)
		if err != nil {
			t.Fatal(err)
		}
		got := values(t, host)
		cols := shape[len(shape)-1]
		for i, v := range got {
			if w := c.want(i, cols); v != w && !(math.IsInf(float64(w), 0) && v == w) {
				t.Fatalf("%v element %d: %v, want %v", shape, i, v, w)
			}
		}

		exec, err := NewExec(backend, func(q, s *Node) *Node { return DequantizeGraph(q, s, NVFP4, shape) })
		if err != nil {
			t.Fatal(err)
		}
		g, err := exec.Exec1(qw, qs)
		if err != nil {
			t.Fatal(err)
		}
		if g.DType() != dtypes.Float32 || !slices.Equal(g.Shape().Dimensions, shape) {
			t.Fatalf("graph output %s, want Float32%v", g.Shape(), shape)
		}
		for i, v := range values(t, g) {
			if v != got[i] && !(math.IsNaN(float64(v)) && math.IsNaN(float64(got[i]))) {
				t.Fatalf("%v element %d: graph %v, host %v", shape, i, v, got[i])
			}
		}

		rowSize := len(got) / shape[0]
		rowsIdx := []int32{1, 0, 1}
		idx := tensors.FromFlatDataAndDimensions(rowsIdx, 3, 1)
		exec2, err := NewExec(backend, func(q, s, i *Node) *Node { return DequantizeNode(Gather(q, i), Gather(s, i), cols) })
		if err != nil {
			t.Fatal(err)
		}
		rows, err := exec2.Exec1(qw, qs, idx)
		if err != nil {
			t.Fatal(err)
		}
		r := values(t, rows)
		for k, row := range rowsIdx {
			for j := 0; j < rowSize; j++ {
				if r[k*rowSize+j] != got[int(row)*rowSize+j] {
					t.Fatalf("gathered row %d element %d: %v, want %v", row, j, r[k*rowSize+j], got[int(row)*rowSize+j])
				}
			}
		}
	}

	// int4 g16 has the same qweight; the qscale's dtype (and width) tells them apart.
	g16 := Spec{Bits: 4, GroupSize: 16}
	if s, err := SpecOf([]int{8, 64}, shapes.Make(dtypes.Uint8, 8, 32), shapes.Make(dtypes.Float32, 8, 4)); err != nil || s != g16 {
		t.Errorf("int4 g16: SpecOf = %v, %v", s, err)
	}
	if s, err := SpecOf([]int{8, 64}, shapes.Make(dtypes.Uint8, 8, 32), shapes.Make(dtypes.Uint8, 8, 8)); err != nil || s != NVFP4 {
		t.Errorf("nvfp4: SpecOf = %v, %v", s, err)
	}
	for _, bad := range []shapes.Shape{shapes.Make(dtypes.Uint8, 8, 4), shapes.Make(dtypes.Uint8, 8, 7), shapes.Make(dtypes.Uint8, 8, 4, 1)} {
		if _, err := SpecOf([]int{8, 64}, shapes.Make(dtypes.Uint8, 8, 32), bad); err == nil {
			t.Errorf("nvfp4 qscale %s accepted", bad)
		}
	}
	if _, err := SpecOf([]int{8, 64}, shapes.Make(dtypes.Int8, 8, 64), shapes.Make(dtypes.Uint8, 8, 8)); err == nil {
		t.Error("Int8 qweight with an nvfp4 qscale accepted")
	}
	c := randomNVFP4(t, 9, scale2s, 8, 64)
	if _, err := Dequantize(c.qw, c.qs, Spec{Bits: 4, GroupSize: 16}, []int{8, 64}); err == nil || !strings.Contains(err.Error(), "nvfp4") {
		t.Errorf("nvfp4 tensors dequantized as int4: %v", err)
	}
	if got := NVFP4.Bytes([]int{128, 1408, 2816}); got != 128*1408*(2816/2+2816/16+4) {
		t.Errorf("Bytes = %d", got)
	}
	_, wt := randomWeight(1, 8, 64)
	if _, _, err := Quantize(wt, NVFP4); err == nil {
		t.Error("Quantize to nvfp4 accepted")
	}
	row := make([]byte, 2+NVFP4ScaleBytes)
	for _, bad := range []struct {
		fp8 []byte
		s2  float32
	}{{[]byte{0x38, 0x7f}, 1}, {[]byte{0x38, 0xff}, 1}, {[]byte{1, 2}, -1}, {[]byte{1, 2}, float32(math.NaN())}, {[]byte{1, 2}, float32(math.Inf(1))}} {
		if err := PutNVFP4ScaleRow(row, bad.fp8, bad.s2); err == nil {
			t.Errorf("scale row %v, %v accepted", bad.fp8, bad.s2)
		}
	}
}

// nearestRef is the index of table's entry nearest v (float64 distances), ties to the
// even index, by looking at every entry.
func nearestRef(table []float64, v float64) int {
	best := 0
	for i := range table {
		d, db := math.Abs(table[i]-v), math.Abs(table[best]-v)
		if d < db || d == db && best%2 == 1 {
			best = i
		}
	}
	return best
}

// TestQuantizeNVFP4: block scales and codes against a search over every FP8 and E2M1
// value (from their definitions, fp8Ref and e2m1Ref), on random blocks, a block of
// zeros, values at the E2M1 midpoints (ties to even) and a block whose scale is FP8's
// largest; the values decode (NVFP4RowScales, E2M1) within half a step of w; bad
// lengths, a non-finite value and a negative scale are errors.
func TestQuantizeNVFP4(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	const blocks = 40
	w := make([]float32, 16*blocks)
	for i := range w {
		w[i] = float32(rng.NormFloat64() * math.Exp(rng.NormFloat64()))
	}
	clear(w[16:32])
	mids := []float32{0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, -0.25, -0.75, -1.25, -1.75, -2.5, -3.5, -5, 6, -0.1}
	var amax float32
	for _, v := range w {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	scale2 := NVFP4TensorScale(amax)
	codes, fp8 := make([]byte, 8*blocks), make([]byte, blocks)
	if err := QuantizeNVFP4(codes, fp8, w, scale2); err != nil {
		t.Fatal(err)
	}
	var fp8Vals, e2m1Vals []float64
	for c := 0; c < 0x7f; c++ {
		fp8Vals = append(fp8Vals, fp8Ref(byte(c)))
	}
	for c := uint8(0); c < 8; c++ {
		e2m1Vals = append(e2m1Vals, e2m1Ref(c))
	}
	check := func(w []float32, codes, fp8 []byte, scale2 float32) {
		t.Helper()
		for b := range len(w) / 16 {
			x := w[16*b : 16*b+16]
			var bmax float64
			for _, v := range x {
				bmax = math.Max(bmax, math.Abs(float64(v)))
			}
			want := 0
			if scale2 > 0 {
				want = nearestRef(fp8Vals, float64(float32(bmax)/(6*scale2)))
			}
			if int(fp8[b]) != want {
				t.Fatalf("block %d: scale code %#02x (%v), want %#02x (%v)", b, fp8[b], fp8Ref(fp8[b]), want, fp8Vals[want])
			}
			s := FP8E4M3(fp8[b]) * scale2
			for i, v := range x {
				c := codes[8*b+i/2] >> (4 * (i % 2)) & 15
				m := 0
				if s > 0 {
					m = nearestRef(e2m1Vals, math.Abs(float64(v/s)))
				}
				if v < 0 && s > 0 {
					m |= 8
				}
				if int(c) != m {
					t.Fatalf("block %d value %d (%v, %v scaled): code %d, want %d", b, i, v, v/s, c, m)
				}
				if d := math.Abs(float64(E2M1[c]*s) - float64(v)); s > 0 && math.Abs(float64(v/s)) <= 6 && d > 0.5*float64(s)*2+1e-12 {
					t.Fatalf("block %d value %d: decodes to %v, %v off", b, i, E2M1[c]*s, d)
				}
			}
		}
	}
	check(w, codes, fp8, scale2)

	// At scale_2 1 and a block amax of 6 (scale code 1.0), the midpoints are exact ties.
	tie := mids
	tc, tf := make([]byte, 8), make([]byte, 1)
	if err := QuantizeNVFP4(tc, tf, tie, 1); err != nil {
		t.Fatal(err)
	}
	if FP8E4M3(tf[0]) != 1 {
		t.Fatalf("tie block scale %v, want 1", FP8E4M3(tf[0]))
	}
	wantTies := []float32{0, 1, 1, 2, 2, 4, 4, -0, -1, -1, -2, -2, -4, -4, 6, -0}
	for i, want := range wantTies {
		c := tc[i/2] >> (4 * (i % 2)) & 15
		if E2M1[c] != want {
			t.Errorf("%v rounds to %v, want %v (ties to even)", tie[i], E2M1[c], want)
		}
	}
	if c := tc[15/2] >> 4; c != 8 {
		t.Errorf("−0.1 rounds to code %d, want 8 (−0)", c)
	}
	check(tie, tc, tf, 1)

	// FP8's largest scale: a block amax of 6·448·scale2.
	big := make([]float32, 16)
	big[3] = 6 * 448
	bc, bf := make([]byte, 8), make([]byte, 1)
	if err := QuantizeNVFP4(bc, bf, big, 1); err != nil || bf[0] != 0x7e {
		t.Fatalf("amax 2688 at scale_2 1: code %#02x, %v; want 0x7e", bf[0], err)
	}
	for _, bad := range []struct {
		w      []float32
		scale2 float32
	}{
		{make([]float32, 15), 1},
		{[]float32{float32(math.NaN()), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 1},
		{make([]float32, 16), -1},
		{make([]float32, 16), float32(math.Inf(1))},
	} {
		if err := QuantizeNVFP4(make([]byte, len(bad.w)/2), make([]byte, len(bad.w)/16), bad.w, bad.scale2); err == nil {
			t.Errorf("%d values, scale_2 %v: no error", len(bad.w), bad.scale2)
		}
	}
}

// TestPutNVFP4ScaleRows: rows written at once are the rows PutNVFP4ScaleRow writes one
// by one; the first NaN code is found wherever it stands (every offset of a word and
// of the tail, every byte value: only 0x7f and 0xff are NaN) and named by row and
// block; a bad scale_2 or bad lengths are errors.
func TestPutNVFP4ScaleRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	const groups, rows = 11, 7
	fp8 := make([]byte, groups*rows)
	for i := range fp8 {
		fp8[i] = byte(rng.IntN(0x7f)) | byte(rng.IntN(2))<<7
	}
	got := make([]byte, rows*(groups+NVFP4ScaleBytes))
	if err := PutNVFP4ScaleRows(got, fp8, groups, 0.0123); err != nil {
		t.Fatal(err)
	}
	for r := range rows {
		want := make([]byte, groups+NVFP4ScaleBytes)
		if err := PutNVFP4ScaleRow(want, fp8[r*groups:(r+1)*groups], 0.0123); err != nil {
			t.Fatal(err)
		}
		if w := groups + NVFP4ScaleBytes; string(got[r*w:(r+1)*w]) != string(want) {
			t.Fatalf("row %d: %v, want %v", r, got[r*w:(r+1)*w], want)
		}
	}
	for at := range fp8 {
		for c := range 256 {
			saved := fp8[at]
			fp8[at] = byte(c)
			err := PutNVFP4ScaleRows(got, fp8, groups, 1)
			fp8[at] = saved
			nan := c&0x7f == 0x7f
			if want := fmt.Sprintf("row %d: block scale %d is NaN", at/groups, at%groups); nan && (err == nil || !strings.Contains(err.Error(), want)) || !nan && err != nil {
				t.Fatalf("code %#02x at %d: %v", c, at, err)
			}
		}
	}
	for _, bad := range []struct {
		dst, fp8, groups int
		scale2           float32
	}{
		{rows * (groups + NVFP4ScaleBytes), groups * rows, groups, -1},
		{rows * (groups + NVFP4ScaleBytes), groups * rows, groups, float32(math.NaN())},
		{rows*(groups+NVFP4ScaleBytes) - 1, groups * rows, groups, 1},
		{rows * (groups + NVFP4ScaleBytes), groups*rows - 1, groups, 1},
		{0, 0, 0, 1},
	} {
		if err := PutNVFP4ScaleRows(make([]byte, bad.dst), make([]byte, bad.fp8), bad.groups, bad.scale2); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// BenchmarkPutNVFP4ScaleRows: a 26B expert's gate_proj (704 rows of 176 block scales),
// at once and a row at a time, as a load lays them out.
func BenchmarkPutNVFP4ScaleRows(b *testing.B) {
	const rows, groups = 704, 176
	fp8, dst := make([]byte, rows*groups), make([]byte, rows*(groups+NVFP4ScaleBytes))
	for i := range fp8 {
		fp8[i] = byte(i % 0x7f)
	}
	b.Run("rows", func(b *testing.B) {
		for b.Loop() {
			if err := PutNVFP4ScaleRows(dst, fp8, groups, 0.5); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("row", func(b *testing.B) {
		w := groups + NVFP4ScaleBytes
		for b.Loop() {
			for r := range rows {
				if err := PutNVFP4ScaleRow(dst[r*w:(r+1)*w], fp8[r*groups:(r+1)*groups], 0.5); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
