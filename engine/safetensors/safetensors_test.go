package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

func flat[T any](t *testing.T, x *tensors.Tensor) []T {
	t.Helper()
	var out []T
	if err := x.ConstFlatData(func(a any) { out = append(out, a.([]T)...) }); err != nil {
		t.Fatal(err)
	}
	return out
}

func eq[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRoundTripAllDTypes writes one tensor of every dtype and reads it back through
// every reader (mmap, fs.FS, bytes).
func TestRoundTripAllDTypes(t *testing.T) {
	f16 := []float32{0, 1, -2.5, 65504, 6.1035156e-05, 5.9604645e-08, float32(math.Inf(-1))}
	f16raw := make([]byte, 2*len(f16))
	for i, v := range f16 {
		binary.LittleEndian.PutUint16(f16raw[2*i:], F32ToF16(v))
	}
	ts := []Named{
		{"f32", tensors.FromFlatDataAndDimensions([]float32{1, -2, 3.5, float32(math.Pi), 0, 1e-30}, 2, 3)},
		{"bf16", tensors.FromFlatDataAndDimensions([]bfloat16.BFloat16{bfloat16.FromFloat32(1.5), bfloat16.FromFloat32(-3)}, 2)},
		{"i8", tensors.FromFlatDataAndDimensions([]int8{-128, 0, 127, -1}, 2, 2)},
		{"u8", tensors.FromFlatDataAndDimensions([]uint8{0, 255, 7}, 3)},
		{"i32", tensors.FromFlatDataAndDimensions([]int32{math.MinInt32, 1, math.MaxInt32}, 1, 3)},
		{"i64", tensors.FromFlatDataAndDimensions([]int64{math.MinInt64, 42}, 2)},
		{"scalar", tensors.FromFlatDataAndDimensions([]float32{7})},
		{"empty", tensors.FromFlatDataAndDimensions([]float32{}, 0, 4)},
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "x.safetensors")
	hs := []Header{}
	for _, nt := range ts {
		dt, _ := FromGoMLX(nt.Tensor.DType())
		hs = append(hs, Header{nt.Name, dt, nt.Tensor.Shape().Dimensions})
	}
	hs = append(hs, Header{"f16", F16, []int{len(f16)}})
	w, err := Create(p, map[string]string{"format": "pt"}, hs)
	if err != nil {
		t.Fatal(err)
	}
	for _, nt := range ts {
		if err := w.WriteTensor(nt.Name, nt.Tensor); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Write("f16", f16raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(p)
	if n := binary.LittleEndian.Uint64(raw); (8+n)%8 != 0 {
		t.Errorf("data section not 8-aligned")
	}
	mm, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer mm.Close()
	fsf, err := OpenFS(fstest.MapFS{"x.safetensors": {Data: raw}}, "x.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	bf, err := FromBytes("x.safetensors", raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []*File{mm, fsf, bf} {
		if f.Metadata["format"] != "pt" {
			t.Errorf("metadata %v", f.Metadata)
		}
		if got := f.Names(); len(got) != len(hs) || got[0] != "f32" || got[len(got)-1] != "f16" {
			t.Errorf("names %v", got)
		}
		for _, nt := range ts {
			got, err := f.Tensor(nt.Name)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Shape().Equal(nt.Tensor.Shape()) {
				t.Fatalf("%s: shape %s, want %s", nt.Name, got.Shape(), nt.Tensor.Shape())
			}
			var same bool
			switch nt.Tensor.DType() {
			case dtypes.Float32:
				same = eq(flat[float32](t, got), flat[float32](t, nt.Tensor))
			case dtypes.BFloat16:
				same = eq(flat[bfloat16.BFloat16](t, got), flat[bfloat16.BFloat16](t, nt.Tensor))
			case dtypes.Int8:
				same = eq(flat[int8](t, got), flat[int8](t, nt.Tensor))
			case dtypes.Uint8:
				same = eq(flat[uint8](t, got), flat[uint8](t, nt.Tensor))
			case dtypes.Int32:
				same = eq(flat[int32](t, got), flat[int32](t, nt.Tensor))
			case dtypes.Int64:
				same = eq(flat[int64](t, got), flat[int64](t, nt.Tensor))
			}
			if !same {
				t.Errorf("%s: values differ", nt.Name)
			}
		}
		got, err := f.Tensor("f16")
		if err != nil {
			t.Fatal(err)
		}
		if got.DType() != dtypes.Float32 || !eq(flat[float32](t, got), f16) {
			t.Errorf("f16 → f32: %v (%s), want %v", flat[float32](t, got), got.DType(), f16)
		}
	}
}

func TestF16Conversion(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := F16ToF32(uint16(h))
		if math.IsNaN(float64(f)) {
			continue
		}
		if back := F32ToF16(f); back != uint16(h) {
			t.Fatalf("f16 %#04x → %v → %#04x", h, f, back)
		}
	}
}

// header builds a file from a header value and a data size.
func header(h any, data int) []byte {
	js, _ := json.Marshal(h)
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	return append(append(b, js...), make([]byte, data)...)
}

func entry(dt string, shape []int, b, e int) map[string]any {
	return map[string]any{"dtype": dt, "shape": shape, "data_offsets": []int{b, e}}
}

// TestMalformed: every broken file is an error naming the file (and the tensor where
// there is one), never a panic.
func TestMalformed(t *testing.T) {
	good := header(map[string]any{"a": entry("F32", []int{2}, 0, 8), "b": entry("BF16", []int{2, 2}, 8, 16)}, 16)
	cases := []struct {
		name string
		file []byte
		want []string
	}{
		{"empty", nil, []string{"too short"}},
		{"truncated data", good[:len(good)-3], []string{"tensor b", "out of range", "truncated"}},
		{"truncated header", good[:20], []string{"header length", "exceeds"}},
		{"huge header length", binary.LittleEndian.AppendUint64(nil, 1<<62), []string{"too large"}},
		{"not json", append(binary.LittleEndian.AppendUint64(nil, 4), "{{{{"...), []string{"malformed header"}},
		{"header is a list", header([]int{1}, 0), []string{"malformed header"}},
		{"bad dtype", header(map[string]any{"a": entry("F8", []int{2}, 0, 2)}, 2), []string{"tensor a", "unsupported dtype"}},
		{"shape/bytes mismatch", header(map[string]any{"a": entry("F32", []int{3}, 0, 8)}, 8), []string{"tensor a", "shape [3]", "needs 12 bytes"}},
		{"offsets reversed", header(map[string]any{"a": entry("F32", []int{0}, 8, 0)}, 8), []string{"tensor a", "out of range"}},
		{"offsets past end", header(map[string]any{"a": entry("F32", []int{4}, 0, 16)}, 8), []string{"tensor a", "out of range"}},
		{"overlap", header(map[string]any{"a": entry("F32", []int{2}, 0, 8), "b": entry("F32", []int{2}, 4, 12)}, 12), []string{"tensor b", "overlap tensor a"}},
		{"negative dim", header(map[string]any{"a": entry("F32", []int{-2}, 0, 0)}, 0), []string{"tensor a", "shape"}},
		{"offsets count", header(map[string]any{"a": map[string]any{"dtype": "F32", "shape": []int{1}, "data_offsets": []int{0}}}, 4), []string{"tensor a", "data_offsets"}},
		{"missing shape", header(map[string]any{"a": map[string]any{"dtype": "F32", "data_offsets": []int{0, 4}}}, 4), []string{"tensor a", "shape is missing"}},
		{"bad metadata", header(map[string]any{"__metadata__": map[string]any{"x": 1}}, 0), []string{"__metadata__"}},
		{"overflowing shape", header(map[string]any{"a": entry("F32", []int{1 << 30, 1 << 30, 1 << 30}, 0, 4)}, 4), []string{"tensor a", "too large"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := FromBytes("bad.safetensors", c.file)
			if err == nil {
				t.Fatalf("no error (file %v)", f.Names())
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "bad.safetensors: ") {
				t.Errorf("error %q does not name the file", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			// Reading the header alone finds the same fault.
			_, err = ReadInfosFS(fstest.MapFS{"bad.safetensors": {Data: c.file}}, "bad.safetensors")
			if err == nil {
				t.Fatal("ReadInfosFS: no error")
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "bad.safetensors: ") {
				t.Errorf("ReadInfosFS error %q does not name the file", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("ReadInfosFS error %q does not contain %q", err, w)
				}
			}
		})
	}
	infos, err := ReadInfosFS(fstest.MapFS{"ok.safetensors": {Data: good}}, "ok.safetensors")
	if err != nil || len(infos) != 2 {
		t.Fatalf("ReadInfosFS of a good file: %v, %v", infos, err)
	}
	whole, _ := FromBytes("ok.safetensors", good)
	for _, in := range infos {
		if w, ok := whole.Info(in.Name); !ok || !reflect.DeepEqual(w, in) {
			t.Errorf("ReadInfosFS %+v, the whole file's %+v", in, w)
		}
	}
	// On disk, through the mmap path: the file name is in the error too.
	p := filepath.Join(t.TempDir(), "model-00002-of-00003.safetensors")
	os.WriteFile(p, good[:len(good)-3], 0o644)
	if _, err := Open(p); err == nil || !strings.HasPrefix(err.Error(), "model-00002-of-00003.safetensors: tensor b") {
		t.Errorf("Open truncated: %v", err)
	}
	f, err := FromBytes("ok", good)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Tensor("zz"); err == nil || err.Error() != "ok: missing tensor zz" {
		t.Errorf("missing: %v", err)
	}
}

func TestWriterErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "w.safetensors")
	w, err := Create(p, nil, []Header{{"a", F32, []int{2}}, {"b", I8, []int{3}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write("b", make([]byte, 3)); err == nil {
		t.Error("out of order write accepted")
	}
	if err := w.Write("a", make([]byte, 7)); err == nil {
		t.Error("wrong size accepted")
	}
	if err := w.Write("a", make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "1 of 2 tensors") {
		t.Errorf("incomplete close: %v", err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Error("incomplete file published")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("temp files left: %v", ents)
	}
	if _, err := Create(p, nil, []Header{{"a", F32, nil}, {"a", F32, nil}}); err == nil {
		t.Error("duplicate accepted")
	}
}

// TestWriterStreams: a tensor written in parts through Next is the same file as one
// written whole, and a tensor left short or overrun is an error that publishes nothing.
func TestWriterStreams(t *testing.T) {
	dir := t.TempDir()
	data := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	hs := []Header{{"a", F32, []int{3}}, {"b", U8, []int{0}}, {"c", I8, []int{2}}}
	whole, parts := filepath.Join(dir, "whole.safetensors"), filepath.Join(dir, "parts.safetensors")
	w, err := Create(whole, nil, hs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []error{w.Write("a", data), w.Write("b", nil), w.Write("c", []byte{13, 14}), w.Close()} {
		if e != nil {
			t.Fatal(e)
		}
	}
	w, err = Create(parts, nil, hs)
	if err != nil {
		t.Fatal(err)
	}
	tw, err := w.Next("a")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][]byte{data[:5], data[5:5], data[5:]} {
		if _, err := tw.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Next("b"); err != nil { // empty: nothing to write
		t.Fatal(err)
	}
	if tw, err = w.Next("c"); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(tw, bytes.NewReader([]byte{13, 14})); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(whole)
	b, _ := os.ReadFile(parts)
	if !bytes.Equal(a, b) {
		t.Errorf("streamed file differs from the one written whole")
	}

	short := filepath.Join(dir, "short.safetensors")
	w, _ = Create(short, nil, hs)
	tw, _ = w.Next("a")
	tw.Write(data[:11])
	if _, err := w.Next("b"); err == nil || !strings.Contains(err.Error(), "tensor a: 1 bytes short") {
		t.Errorf("next after a short tensor: %v", err)
	}
	if err := w.Close(); err == nil {
		t.Error("close after a short tensor succeeded")
	}
	over := filepath.Join(dir, "over.safetensors")
	w, _ = Create(over, nil, hs)
	tw, _ = w.Next("a")
	if _, err := tw.Write(make([]byte, 13)); err == nil || !strings.Contains(err.Error(), "1 bytes more") {
		t.Errorf("overrun: %v", err)
	}
	if err := w.Close(); err == nil {
		t.Error("close after an overrun succeeded")
	}
	w, _ = Create(over, nil, hs)
	w.Write("a", data)
	w.Write("b", nil)
	tw, _ = w.Next("c")
	tw.Write([]byte{1})
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "tensor c: 1 bytes short") {
		t.Errorf("close with the last tensor short: %v", err)
	}
	for _, p := range []string{short, over} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s published", filepath.Base(p))
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("files left: %v", ents)
	}
}

func TestShardedCheckpoint(t *testing.T) {
	dir := t.TempDir()
	a := tensors.FromFlatDataAndDimensions([]float32{1, 2}, 2)
	b := tensors.FromFlatDataAndDimensions([]int8{3}, 1)
	if err := WriteFile(filepath.Join(dir, "s1.safetensors"), nil, []Named{{"a", a}}); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(dir, "s2.safetensors"), nil, []Named{{"b", b}}); err != nil {
		t.Fatal(err)
	}
	if err := WriteIndex(dir, Index{WeightMap: map[string]string{"a": "s1.safetensors", "b": "s2.safetensors"}}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"s1.safetensors", IndexFile} { // shared model files, like a download
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v (%v), want rw-r--r--", f, st.Mode().Perm(), err)
		}
	}
	ck, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := ck.Names(); !eq(got, []string{"a", "b"}) {
		t.Errorf("names %v", got)
	}
	x, err := ck.Tensor("b")
	if err != nil || flat[int8](t, x)[0] != 3 {
		t.Errorf("b = %v, %v", x, err)
	}
	ck.Close()
	// The index pointing at the wrong shard.
	WriteIndex(dir, Index{WeightMap: map[string]string{"a": "s2.safetensors"}})
	if _, err := OpenCheckpoint(dir); err == nil || err.Error() != "s2.safetensors: missing tensor a (listed in model.safetensors.index.json)" {
		t.Errorf("wrong shard: %v", err)
	}
	WriteIndex(dir, Index{WeightMap: map[string]string{"a": "../x"}})
	if _, err := OpenCheckpoint(dir); err == nil {
		t.Error("path in shard name accepted")
	}
	if _, err := OpenCheckpoint(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no model.safetensors") {
		t.Errorf("empty dir: %v", err)
	}
}

// TestCheckpointReadProgress: where a checkpoint's files are read rather than mapped
// (DARKROOM_NO_MMAP, as on Windows), OpenCheckpointProgress counts their bytes up to
// all of its files' — the shards, or the single file — and the tensors are the
// mapped ones; mapped, it reports nothing.
func TestCheckpointReadProgress(t *testing.T) {
	sharded, single := t.TempDir(), t.TempDir()
	a := tensors.FromFlatDataAndDimensions(make([]float32, 1000), 1000)
	b := tensors.FromFlatDataAndDimensions([]int8{3, 4, 5}, 3)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(WriteFile(filepath.Join(sharded, "s1.safetensors"), nil, []Named{{"a", a}}))
	must(WriteFile(filepath.Join(sharded, "s2.safetensors"), nil, []Named{{"b", b}}))
	must(WriteIndex(sharded, Index{WeightMap: map[string]string{"a": "s1.safetensors", "b": "s2.safetensors"}}))
	must(WriteFile(filepath.Join(single, SingleFile), nil, []Named{{"a", a}, {"b", b}}))
	size := func(dir string, names ...string) (n int64) {
		for _, name := range names {
			st, err := os.Stat(filepath.Join(dir, name))
			must(err)
			n += st.Size()
		}
		return n
	}
	for _, c := range []struct {
		dir   string
		total int64
	}{{sharded, size(sharded, "s1.safetensors", "s2.safetensors")}, {single, size(single, SingleFile)}} {
		for _, noMap := range []bool{false, true} {
			t.Setenv("DARKROOM_NO_MMAP", map[bool]string{false: "0", true: "1"}[noMap])
			var reports [][2]int64
			ck, err := OpenCheckpointProgress(c.dir, func(done, total int64) { reports = append(reports, [2]int64{done, total}) })
			must(err)
			x, err := ck.Tensor("b")
			if err != nil || !eq(flat[int8](t, x), []int8{3, 4, 5}) {
				t.Errorf("%s, no mapping %v: b = %v, %v", filepath.Base(c.dir), noMap, x, err)
			}
			ck.Close()
			if mapped := !noMap; mapped {
				if len(reports) != 0 {
					t.Errorf("mapped: reports %v, want none", reports)
				}
				continue
			}
			n := len(reports)
			if n == 0 || reports[n-1] != [2]int64{c.total, c.total} {
				t.Fatalf("read: reports %v, want counts up to %d of %d", reports, c.total, c.total)
			}
			for i := 1; i < n; i++ {
				if reports[i][0] <= reports[i-1][0] || reports[i][1] != c.total {
					t.Fatalf("read: reports %v do not rise to one total", reports)
				}
			}
		}
	}
}

// FuzzParseHeader: arbitrary bytes never panic the parser; whatever it accepts has
// in-range, non-overlapping offsets. `go test -fuzz FuzzParseHeader` explores further;
// a plain `go test` runs the seeds.
func FuzzParseHeader(f *testing.F) {
	f.Add(header(map[string]any{"a": entry("F32", []int{2}, 0, 8)}, 8))
	f.Add(header(map[string]any{"a": entry("BF16", []int{2, 2}, 0, 8), "__metadata__": map[string]string{"k": "v"}}, 8))
	f.Add(header(map[string]any{"a": entry("I64", []int{}, 0, 8), "b": entry("U8", []int{0}, 8, 8)}, 8))
	f.Add([]byte{})
	f.Add(binary.LittleEndian.AppendUint64(nil, 2))
	f.Add(append(binary.LittleEndian.AppendUint64(nil, 2), "{}"...))
	f.Add(header(map[string]any{"a": entry("F32", []int{1 << 31, 4}, 0, 8)}, 8))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := FromBytes("fuzz", b)
		if err != nil {
			return
		}
		var prevEnd int64
		for _, n := range file.Names() {
			info, _ := file.Info(n)
			if info.Begin < prevEnd || info.End > int64(len(file.data)) {
				t.Fatalf("accepted bad offsets %+v", info)
			}
			prevEnd = info.End
			if _, err := file.Tensor(n); err != nil {
				t.Fatalf("accepted header but tensor %s fails: %v", n, err)
			}
		}
	})
}

// e4m3Ref is an independent float8_e4m3fn decoder written from the OCP FP8 spec's
// table of values rather than bit arithmetic: magnitude = 2^(e−7)·(1+m/8) for
// e ≥ 1, m·2⁻⁹ for e = 0, NaN for e = 15, m = 7.
func e4m3Ref(b byte) float64 {
	e, m := float64(b>>3&15), float64(b&7)
	var v float64
	switch {
	case b&0x7f == 0x7f:
		return math.NaN()
	case e == 0:
		v = m * math.Pow(2, -9)
	default:
		v = math.Pow(2, e-7) * (1 + m/8)
	}
	if b&0x80 != 0 {
		v = -v
	}
	return v
}

// e5m2Ref is float8_e5m2 from its definition: bias 15, 2 mantissa bits, e = 31 is
// ±Inf (m = 0) or NaN.
func e5m2Ref(b byte) float64 {
	e, m := float64(b>>2&31), float64(b&3)
	var v float64
	switch {
	case e == 31 && m == 0:
		v = math.Inf(1)
	case e == 31:
		return math.NaN()
	case e == 0:
		v = m / 4 * math.Pow(2, -14)
	default:
		v = math.Pow(2, e-15) * (1 + m/4)
	}
	if b&0x80 != 0 {
		v = -v
	}
	return v
}

// TestF8Decoding checks all 256 codes of both 8-bit float formats against the
// independent decoders, the known extremes, and that reading an F8 tensor from a
// file widens it to Float32.
func TestF8Decoding(t *testing.T) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		for _, k := range []struct {
			name string
			got  float32
			want float64
		}{{"e4m3", F8E4M3ToF32(b), e4m3Ref(b)}, {"e5m2", F8E5M2ToF32(b), e5m2Ref(b)}} {
			if math.IsNaN(k.want) {
				if !math.IsNaN(float64(k.got)) {
					t.Errorf("%s code %#02x: got %v, want NaN", k.name, c, k.got)
				}
				continue
			}
			if float64(k.got) != k.want || math.Signbit(float64(k.got)) != math.Signbit(k.want) {
				t.Errorf("%s code %#02x: got %v, want %v", k.name, c, k.got, k.want)
			}
		}
	}
	for _, c := range []struct {
		b    byte
		want float32
	}{{0x7e, 448}, {0xfe, -448}, {0x01, 1.0 / 512}, {0x38, 1}, {0x08, 1.0 / 64}, {0x80, float32(math.Copysign(0, -1))}} {
		if got := F8E4M3ToF32(c.b); got != c.want || math.Signbit(float64(got)) != math.Signbit(float64(c.want)) {
			t.Errorf("e4m3 %#02x = %v, want %v", c.b, got, c.want)
		}
	}
	if got := F8E5M2ToF32(0x7b); got != 57344 {
		t.Errorf("e5m2 max = %v, want 57344", got)
	}
	// Through a file: both dtypes come back as Float32 of the same shape.
	dir := t.TempDir()
	p := filepath.Join(dir, "f8.safetensors")
	w, err := Create(p, nil, []Header{{Name: "a", DType: F8E4M3, Shape: []int{2, 2}}, {Name: "b", DType: F8E5M2, Shape: []int{3}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write("a", []byte{0x38, 0xb8, 0x7e, 0x01}); err != nil {
		t.Fatal(err)
	}
	if err := w.Write("b", []byte{0x3c, 0x7c, 0x01}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := f.Tensor("a")
	if err != nil {
		t.Fatal(err)
	}
	if a.DType() != dtypes.Float32 || !eq(a.Shape().Dimensions, []int{2, 2}) || !eq(flat[float32](t, a), []float32{1, -1, 448, 1.0 / 512}) {
		t.Errorf("F8_E4M3 tensor = %s %v", a.Shape(), flat[float32](t, a))
	}
	b, err := f.Tensor("b")
	if err != nil {
		t.Fatal(err)
	}
	if got := flat[float32](t, b); got[0] != 1 || !math.IsInf(float64(got[1]), 1) || got[2] != float32(math.Pow(2, -16)) {
		t.Errorf("F8_E5M2 tensor = %v", got)
	}
}

// TestCheckpointReadFile reads a sidecar file through the checkpoint, from a directory
// and from an fs.FS, and refuses paths outside the directory.
func TestCheckpointReadFile(t *testing.T) {
	dir := t.TempDir()
	one := []Named{{"x", tensors.FromFlatDataAndDimensions([]float32{1}, 1)}}
	if err := WriteFile(filepath.Join(dir, SingleFile), nil, one); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "side.json"), []byte(`{"k":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ck, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	if b, err := ck.ReadFile("side.json"); err != nil || string(b) != `{"k":1}` {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
	for _, bad := range []string{"missing.json", "../side.json", "", ".."} {
		if _, err := ck.ReadFile(bad); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile(%q) error = %v, want not-exist", bad, err)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(dir, SingleFile))
	fsys := fstest.MapFS{"m/" + SingleFile: {Data: raw}, "m/side.json": {Data: []byte("fs")}}
	ck2, err := OpenCheckpointFS(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := ck2.ReadFile("side.json"); err != nil || string(b) != "fs" {
		t.Errorf("FS ReadFile = %q, %v", b, err)
	}
}

// TestWriteFileMode: a written model file is readable by everyone (0644), like a
// downloaded one, not os.CreateTemp's 0600.
func TestWriteFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := WriteFile(path, nil, []Named{{Name: "w", Tensor: tensors.FromFlatDataAndDimensions([]float32{1, 2}, 2)}}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := st.Mode().Perm(); m != 0o644 {
		t.Errorf("mode %v, want 0644", m)
	}
}
