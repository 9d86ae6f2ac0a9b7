package weights_test

import (
	"bytes"
	"github.com/darkroomlabs/darkroom/engine/mapfile"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/kernels"
	"github.com/darkroomlabs/darkroom/engine/model"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/weights"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// float32Source is a model.HostSource over float32 weights of the given shapes (the
// reference).
type float32Source struct {
	vals   map[string][]float32
	shapes map[string][]int
}

func (s float32Source) Lookup(name string) (weights.Stored, any, bool, error) {
	v, ok := s.vals[name]
	if !ok {
		return weights.Stored{}, nil, false, nil
	}
	return weights.Stored{Name: name, Shape: s.shapes[name], DType: dtypes.Float32,
		Data: unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))}, "float32", true, nil
}

// hostRun drives a host runner: a prompt, two decoder steps with self-conditioning, the
// canvas committed and an AR token; it returns every logit and soft embedding.
func hostRun(t *testing.T, r *model.Runner) [][]float32 {
	t.Helper()
	var outs [][]float32
	last, err := r.Encode([]int{2, 17, 40, 99, 7, 300, 12, 5, 61})
	if err != nil {
		t.Fatal(err)
	}
	outs = append(outs, last)
	canvas := []int{3, 9, 27, 81, 243, 220, 150, 77}
	var soft *tensors.Tensor
	for _, temp := range []float64{0.8, 0.6} {
		logits, next, err := r.Decode(canvas, soft, temp)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, logits, tensors.MustCopyFlatData[float32](next))
		soft = next
	}
	for _, toks := range [][]int{canvas, {44}} {
		last, err := r.Encode(toks)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, last)
	}
	return outs
}

// int8G32 is vals as int8 with a scale per 32 values, s = max|x|/127, q = x/s rounded
// to nearest (ties to even), then q·s in float32: what a Q6_K matrix
// holds (weights.HostHeld).
func int8G32(vals []float32) []float32 {
	out := make([]float32, len(vals))
	for g := 0; g < len(vals); g += 32 {
		var amax float32
		for _, v := range vals[g : g+32] {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		if amax == 0 {
			continue
		}
		s := amax / 127
		inv := 1 / s
		for i, v := range vals[g : g+32] {
			q := max(-127, min(127, math.RoundToEven(float64(v*inv))))
			out[g+i] = float32(q) * s
		}
	}
	return out
}

// mapGGUF writes ggufConfig's random GGUF file (split: its gate and up experts apart)
// and maps it (weights.Map), closed when the test ends.
func mapGGUF(t *testing.T, split bool) (*config.Model, *ggufFixture, *weights.Mapped) {
	t.Helper()
	cfg := ggufConfig()
	fx := writeGGUF(t, t.TempDir(), cfg, split, nil)
	m, ok, err := weights.Map(filepath.Dir(fx.path), cfg, nil)
	if err != nil || !ok {
		t.Fatalf("Map = %v, %v", ok, err)
	}
	t.Cleanup(func() { m.Close() })
	return cfg, fx, m
}

// TestGGUFStoredOnHost: a GGUF file read by weights.Map keeps each matrix in its GGUF
// type (IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q8_0, Q4_0, Q4_1, Q5_1, Q5_0; split gate and up experts
// interleaved, Q6_K too), but a Q6_K embedding (weights.HostHeld) as int8 with a
// scale per 32, and the host model over it gives the logits and soft embeddings of the
// float32 host path on the GGUF's own dequantization (the embedding's int8G32), within
// float32 rounding.
func TestGGUFStoredOnHost(t *testing.T) {
	defer kernels.SetIntProducts(kernels.SetIntProducts(false)) // the float32 path, within its rounding (engine/kernels TestMulNTInt: the integer one)
	for _, split := range []bool{false, true} {
		cfg, fx, m := mapGGUF(t, split)
		stored := map[string][]float32{}
		converted := 0
		for _, sp := range weights.Specs(cfg) {
			s, _, ok, err := m.Lookup(sp.Name)
			if err != nil || !ok {
				t.Fatalf("Lookup(%s) = %v, %v", sp.Name, ok, err)
			}
			stored[sp.Name] = fx.stored[sp.Name]
			typ := fx.types[sp.Name]
			switch {
			case len(sp.Shape) < 2 || typ == gguf.F32 || typ == gguf.BF16:
			case typ == gguf.Q6_K && sp.Name == weights.EmbeddingName:
				if held, ok := weights.HostHeld(typ, sp.Name); !ok || s.Blocks || s.Quant == nil || *s.Quant != held || held != (quant.Spec{Bits: 8, GroupSize: 32}) {
					t.Errorf("%s: held as %+v (blocks %v, %v), want int8 in groups of 32 with float32 scales", sp.Name, s.Quant, s.Blocks, s.GGUF)
				}
				stored[sp.Name] = int8G32(fx.stored[sp.Name])
				converted++
			case !s.Blocks || s.GGUF != typ:
				t.Errorf("%s: held as %v (blocks %v), want the file's %s", sp.Name, s.GGUF, s.Blocks, typ)
			}
		}
		if converted == 0 {
			t.Fatal("the file's embedding is not Q6_K")
		}
		seen := map[gguf.Type]bool{}
		for _, typ := range fx.types {
			seen[typ] = true
		}
		for _, want := range []gguf.Type{gguf.IQ4_NL, gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1, gguf.Q8_0} {
			if !seen[want] {
				t.Errorf("the file has no %s matrix", want)
			}
		}
		got, err := model.NewHostRunner(&cfg.Text, m)
		if err != nil {
			t.Fatal(err)
		}
		shapes := map[string][]int{}
		for _, sp := range weights.Specs(cfg) {
			shapes[sp.Name] = sp.Shape
		}
		ref, err := model.NewHostRunner(&cfg.Text, float32Source{stored, shapes})
		if err != nil {
			t.Fatal(err)
		}
		g, w := hostRun(t, got), hostRun(t, ref)
		for i := range w {
			var diff, scale float64
			for j := range w[i] {
				diff = max(diff, math.Abs(float64(g[i][j]-w[i][j])))
				scale = max(scale, math.Abs(float64(w[i][j])))
			}
			if diff > 2e-5*scale || math.IsNaN(diff) || scale == 0 {
				t.Errorf("split %v, output %d: max difference %.3g against the float32 path (scale %.3g)", split, i, diff, scale)
			}
		}
	}
}

// TestGGUFStoredInPlace: where the file is mapped (Unix), a GGUF's matrices kept as
// stored are views of it, not heap copies — a write over the file's data section after
// Lookup shows through them — split gate and up experts too (held in parts, one per
// expert and projection), save a Q6_K embedding converted on the heap (weights.HostHeld).
func TestGGUFStoredInPlace(t *testing.T) {
	if mapfile.Off() {
		t.Skip("mapping is turned off (DARKROOM_NO_MMAP)")
	}
	for _, split := range []bool{false, true} {
		cfg, fx, m := mapGGUF(t, split)
		held := map[string]weights.Stored{}
		firstRead := map[string]int64{}
		for _, sp := range weights.Specs(cfg) {
			firstRead[sp.Name] = m.FirstRead(sp.Name)
			s, _, ok, err := m.Lookup(sp.Name)
			if err != nil || !ok {
				t.Fatalf("Lookup(%s) = %v, %v", sp.Name, ok, err)
			}
			if n := m.FirstRead(sp.Name); n != 0 {
				t.Errorf("FirstRead(%s) after its Lookup = %d, want 0", sp.Name, n)
			}
			if len(sp.Shape) >= 2 {
				held[sp.Name] = s
			} else if firstRead[sp.Name] != fileBytes(t, fx.path, sp) {
				t.Errorf("vector %s: FirstRead %d, want its %d bytes in the file", sp.Name, firstRead[sp.Name], fileBytes(t, fx.path, sp))
			}
		}
		for _, sp := range weights.Specs(cfg) {
			if _, ok := held[sp.Name]; !ok {
				continue
			}
			want := int64(0) // a view of the mapping reads nothing onto the heap
			if _, conv := weights.HostHeld(fx.types[sp.Name], sp.Name); conv {
				want = fileBytes(t, fx.path, sp)
			}
			if firstRead[sp.Name] != want {
				t.Errorf("split %v, %s (%s): FirstRead %d, want %d", split, sp.Name, fx.types[sp.Name], firstRead[sp.Name], want)
			}
		}
		f, err := gguf.Open(fx.path)
		if err != nil {
			t.Fatal(err)
		}
		data := int64(f.DataOffset)
		f.Close()
		w, err := os.OpenFile(fx.path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := w.Stat()
		_, err = w.WriteAt(bytes.Repeat([]byte{0xA5}, int(st.Size()-data)), data)
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		views := 0
		for name, s := range held {
			inPlace := true
			for _, b := range s.Spans() {
				inPlace = inPlace && len(bytes.Trim(b, "\xa5")) == 0
			}
			_, conv := weights.HostHeld(fx.types[name], name)
			if parts, want := len(s.Parts), 0; split && strings.HasSuffix(name, "gate_up_proj") && !conv {
				if want = 2 * cfg.Text.NumExperts; parts != want {
					t.Errorf("split %s: %d parts, want %d", name, parts, want)
				}
			} else if parts != want {
				t.Errorf("%s (split %v): %d parts, want none", name, split, parts)
			}
			if want := !conv; inPlace != want {
				t.Errorf("split %v, %s (%s): a view of the file %v, want %v", split, name, fx.types[name], inPlace, want)
			}
			if inPlace {
				views++
			}
		}
		if views == 0 {
			t.Errorf("split %v: no matrix is a view of the file", split)
		}
	}
}

// fileBytes is the bytes of sp's tensor (both parts of split experts) in the GGUF
// file at path.
func fileBytes(t *testing.T, path string, sp weights.Spec) int64 {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var n int64
	for _, name := range append([]string{sp.GGUF}, sp.GGUFSplit...) {
		if ti, ok := f.Lookup(name); ok {
			n += int64(ti.Size)
		}
	}
	return n
}

// TestGGUFReadWeightsProgress: the host model's reading of a GGUF as it loads
// (Runner.ReadWeights) counts every weight's bytes in the file, as Set does: those its
// Lookup reads onto the heap (Q6_K converted, split experts, vectors; on Windows all)
// as they are read, the mapped ones as they are brought into memory.
//
// With mapping turned off (DARKROOM_NO_MMAP, the way Windows loads) every tensor is
// read onto the heap by its first Lookup (FirstRead: its bytes in the file), counted
// the same, and the host model's logits are the mapped file's, bit for bit.
func TestGGUFReadWeightsProgress(t *testing.T) {
	mappedLast := map[bool][]float32{} // the mapped file's logits, by split
	for _, noMap := range []bool{false, true} {
		if noMap {
			t.Setenv("DARKROOM_NO_MMAP", "1")
		}
		for _, split := range []bool{false, true} {
			cfg, fx, m := mapGGUF(t, split)
			var total int64
			for _, sp := range weights.Specs(cfg) {
				n := fileBytes(t, fx.path, sp)
				if got := m.FirstRead(sp.Name); noMap && got != n {
					t.Errorf("no mapping: FirstRead(%s) = %d, want its %d bytes in the file", sp.Name, got, n)
				}
				total += n
			}
			r, err := model.NewHostRunner(&cfg.Text, m)
			if err != nil {
				t.Fatal(err)
			}
			var reports [][2]int64
			r.ReadWeights(nil, func(done, all int64) { reports = append(reports, [2]int64{done, all}) })
			weights.CheckProgress(t, reports, total)
			last, err := r.Encode([]int{2, 17, 40, 99})
			if err != nil {
				t.Fatal(err)
			}
			if !noMap {
				mappedLast[split] = last
			} else if !slices.Equal(last, mappedLast[split]) {
				t.Errorf("split %v: the unmapped file's logits differ from the mapped one's", split)
			}
		}
	}
}

// TestGGUFSetProgress: converting a GGUF for the graph path (Mapped.Set) counts the
// file's bytes of each weight once it is converted, up to all of the weight table's
// (split gate and up experts: both parts at once).
func TestGGUFSetProgress(t *testing.T) {
	for _, split := range []bool{false, true} {
		cfg, fx, m := mapGGUF(t, split)
		f, err := gguf.Open(fx.path)
		if err != nil {
			t.Fatal(err)
		}
		var total int64 // the weight table's tensors in the file (rope_freqs is not one)
		for _, sp := range weights.Specs(cfg) {
			for _, name := range append([]string{sp.GGUF}, sp.GGUFSplit...) {
				if ti, ok := f.Lookup(name); ok {
					total += int64(ti.Size)
				}
			}
		}
		f.Close()
		var reports [][2]int64
		if _, err := m.Set(func(done, all int64) { reports = append(reports, [2]int64{done, all}) }); err != nil {
			t.Fatal(err)
		}
		weights.CheckProgress(t, reports, total)
	}
}
