package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gomlx/gomlx/backends"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/darkroomlabs/darkroom/engine/gguf"
)

// randomBlocks is rows of random ggml blocks of type t for a weight of shape: random
// bytes, each binary16 scale field a finite half (normal or subnormal, either sign).
func randomBlocks(r *rand.Rand, typ gguf.Type, shape []int) []byte {
	n := 1
	for _, d := range shape {
		n *= d
	}
	size := typ.BlockBytes()
	raw := make([]byte, n/typ.BlockSize()*size)
	for i := range raw {
		raw[i] = byte(r.UintN(256))
	}
	var halves []int // offsets of binary16 fields in a block
	switch typ {
	case gguf.Q4_K, gguf.Q5_K:
		halves = []int{0, 2}
	case gguf.Q6_K:
		halves = []int{208}
	case gguf.Q8_0, gguf.Q4_0, gguf.Q5_0, gguf.IQ4_NL, gguf.IQ4_XS:
		halves = []int{0}
	case gguf.Q2_K:
		halves = []int{80, 82}
	case gguf.Q3_K:
		halves = []int{108}
	case gguf.Q4_1, gguf.Q5_1:
		halves = []int{0, 2}
	}
	for b := 0; b < len(raw); b += size {
		for _, o := range halves {
			h := uint16(r.UintN(0x7c00)) // exponent < 31: finite
			if r.IntN(2) == 0 {
				h |= 0x8000
			}
			binary.LittleEndian.PutUint16(raw[b+o:], h)
		}
	}
	return raw
}

// keptTensors splits raw blocks of type typ for a weight of shape into the kept
// format's tensors.
func keptTensors(t *testing.T, typ gguf.Type, raw []byte, shape []int) (Spec, []*tensors.Tensor) {
	t.Helper()
	spec, ok := map[gguf.Type]Spec{gguf.Q4_K: KQ4, gguf.Q5_K: KQ5, gguf.Q6_K: KQ6, gguf.Q4_0: BQ40,
		gguf.Q4_1: BQ41, gguf.Q5_0: BQ50, gguf.Q5_1: BQ51, gguf.Q8_0: Q8F16, gguf.Q2_K: KQ2, gguf.Q3_K: KQ3,
		gguf.IQ4_NL: BIQ4NL, gguf.IQ4_XS: BIQ4XS}[typ]
	if !ok {
		t.Fatalf("%s has no kept format", typ)
	}
	if c, sc, su, ok := gguf.PartSizes(typ); !ok || spec.Bytes([]int{typ.BlockSize()}) != int64(c+sc+su) {
		t.Fatalf("%s's parts (%d, %d, %d bytes, %v) are not %s's", typ, c, sc, su, ok, spec)
	}
	w, s := spec.Shapes(shape)
	ts := []*tensors.Tensor{tensors.FromShape(shapes.Make(spec.DType(), w...)), tensors.FromShape(shapes.Make(spec.ScaleDType(), s...))}
	if spec.HasMin() {
		ts = append(ts, tensors.FromShape(shapes.Make(spec.MinDType(), spec.MinShape(shape)...)))
	}
	var parts [3][]byte
	for i, x := range ts {
		x.MutableBytes(func(b []byte) { parts[i] = b })
	}
	if err := gguf.Split(typ, raw, parts[0], parts[1], parts[2]); err != nil {
		t.Fatal(err)
	}
	return spec, ts
}

// TestBlocksGraph: GGUF blocks of each type Darkroom reads, split into their kept
// format's tensors, dequantize in the graph (the go backend) exactly as engine/gguf
// dequantizes the blocks themselves (ggml's numbers), whole and as gathered rows;
// the tensors describe themselves (SpecOf, LogicalShape), take exactly the file's
// bytes, and join back into the same blocks. Host Dequantize refuses them
// (engine/weights' Set.Float32 decodes them through engine/gguf: TestGGUFKeptFloat32).
func TestBlocksGraph(t *testing.T) {
	backend, err := backends.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Finalize()
	r := rand.New(rand.NewPCG(14, 1))
	for _, c := range []struct {
		typ   gguf.Type
		shape []int
	}{
		{gguf.Q4_K, []int{3, 2, 512}},
		{gguf.Q5_K, []int{3, 2, 512}},
		{gguf.Q6_K, []int{3, 2, 512}},
		{gguf.Q6_K, []int{4, 256}},
		{gguf.Q8_0, []int{3, 2, 96}},
		{gguf.Q4_0, []int{3, 2, 96}},
		{gguf.Q4_1, []int{3, 2, 96}},
		{gguf.Q5_0, []int{3, 2, 96}},
		{gguf.Q5_1, []int{3, 2, 96}},
		{gguf.Q5_1, []int{4, 32}},
		{gguf.Q2_K, []int{3, 2, 512}},
		{gguf.Q3_K, []int{3, 2, 512}},
		{gguf.IQ4_NL, []int{3, 2, 96}},
		{gguf.IQ4_XS, []int{3, 2, 512}},
	} {
		t.Run(c.typ.String(), func(t *testing.T) {
			raw := randomBlocks(r, c.typ, c.shape)
			n := len(raw) / c.typ.BlockBytes() * c.typ.BlockSize()
			want := make([]float32, n)
			if err := gguf.Dequantize(c.typ, raw, want); err != nil {
				t.Fatal(err)
			}
			spec, ts := keptTensors(t, c.typ, raw, c.shape)
			if got := spec.Bytes(c.shape); got != int64(len(raw)) {
				t.Errorf("%s takes %d bytes, the blocks %d", spec, got, len(raw))
			}
			var stored []shapes.Shape
			for _, x := range ts {
				stored = append(stored, x.Shape())
			}
			if got := LogicalShape(stored[0], stored[1], stored[2:]...); !slices.Equal(got, c.shape) {
				t.Errorf("LogicalShape = %v, want %v", got, c.shape)
			}
			if got, err := SpecOf(c.shape, stored[0], stored[1], stored[2:]...); err != nil || got != spec {
				t.Errorf("SpecOf = %v, %v; want %v", got, err, spec)
			}
			if spec.HasMin() {
				var parts [3][]byte
				for i, x := range ts {
					x.ConstBytes(func(b []byte) { parts[i] = slices.Clone(b) })
				}
				back := make([]byte, len(raw))
				if err := gguf.Join(c.typ, back, parts[0], parts[1], parts[2]); err != nil || !slices.Equal(back, raw) {
					t.Errorf("joined blocks differ from the split ones (%v)", err)
				}
			}

			if _, err := Dequantize(ts[0], ts[1], spec, c.shape, ts[2:]...); err == nil {
				t.Errorf("host Dequantize decoded %s, which engine/weights decodes", spec)
			}

			cols := c.shape[len(c.shape)-1]
			exec, err := NewExec(backend, func(in []*Node) *Node { return DequantizeGraph(in[0], in[1], spec, c.shape, in[2:]...) })
			if err != nil {
				t.Fatal(err)
			}
			args := make([]any, len(ts))
			for i, x := range ts {
				args[i] = x
			}
			got, err := exec.Exec1(args...)
			if err != nil {
				t.Fatal(err)
			}
			exact(t, "graph", values(t, got), want)

			idx := tensors.FromFlatDataAndDimensions([]int32{2, 0, 2}, 3, 1)
			exec2, err := NewExec(backend, func(in []*Node) *Node {
				i := in[len(in)-1]
				var g []*Node
				for _, x := range in[:len(in)-1] {
					g = append(g, Gather(x, i))
				}
				return DequantizeNode(g[0], g[1], cols, g[2:]...)
			})
			if err != nil {
				t.Fatal(err)
			}
			rows, err := exec2.Exec1(append(args, idx)...)
			if err != nil {
				t.Fatal(err)
			}
			per := n / c.shape[0]
			var wantRows []float32
			for _, row := range []int{2, 0, 2} {
				wantRows = append(wantRows, want[row*per:(row+1)*per]...)
			}
			exact(t, "gathered rows", values(t, rows), wantRows)
		})
	}
}

func exact(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: element %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

// TestHalfGraph: every binary16 bit pattern decodes in the graph to the float32
// engine/gguf's HalfToFloat32 gives, bit for bit (zeros' signs and subnormals
// included), but NaNs, which decode to an infinity of their sign.
func TestHalfGraph(t *testing.T) {
	backend, err := backends.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Finalize()
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	exec, err := NewExec(backend, halfGraph)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Exec1(tensors.FromFlatDataAndDimensions(all, len(all)))
	if err != nil {
		t.Fatal(err)
	}
	got := values(t, out)
	for i, h := range all {
		want := gguf.HalfToFloat32(h)
		if math.IsNaN(float64(want)) {
			want = float32(math.Inf(1 - 2*int(h>>15)))
		}
		if math.Float32bits(got[i]) != math.Float32bits(want) {
			t.Fatalf("half %#04x: graph %v (%#08x), want %v (%#08x)", h, got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
		}
	}
}

// TestBlocksSpecOfRefuses: stored parts that do not make whole blocks of a logical
// shape are refused, not read as another format.
func TestBlocksSpecOfRefuses(t *testing.T) {
	logical := []int{4, 512}
	w, s := KQ4.Shapes(logical)
	m := KQ4.MinShape(logical)
	u8, u16 := func(d []int) shapes.Shape { return shapes.Make(KQ4.DType(), d...) }, func(d []int) shapes.Shape { return shapes.Make(KQ4.MinDType(), d...) }
	short := append([]int{}, w...)
	short[1] -= 128
	for name, c := range map[string][3]shapes.Shape{
		"codes a block short":  {u8(short), u8(s), u16(m)},
		"supers for one block": {u8(w), u8(s), u16([]int{4, 2})},
		"scales as Uint16":     {u8(w), shapes.Make(KQ4.MinDType(), s...), u16(m)},
	} {
		if got, err := SpecOf(logical, c[0], c[1], c[2]); err == nil {
			t.Errorf("%s: accepted as %s", name, got)
		}
	}
	if got, err := SpecOf(logical, u8(w), u8(s), u16(m)); err != nil || got != KQ4 {
		t.Errorf("whole blocks: %v, %v", got, err)
	}
}
