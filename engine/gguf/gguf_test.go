package gguf

import (
	"bytes"
	"encoding/binary"
	"github.com/darkroomlabs/darkroom/engine/mapfile"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sample writes a small file with every metadata value type and three tensors.
func sample(t testing.TB, alignment int) []byte {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 8))
	x := gaussian(r, 2*256)
	q4k, _ := Quantize(Q4_K, x)
	q80, _ := Quantize(Q8_0, x[:64])
	f32, _ := Quantize(F32, x[:6])
	kvs := []KV{
		{"general.architecture", Str(Arch)},
		{"u8", Value{Type: TypeUint8, V: uint64(200)}},
		{"i8", Value{Type: TypeInt8, V: int64(-100)}},
		{"u16", Value{Type: TypeUint16, V: uint64(60000)}},
		{"i16", Value{Type: TypeInt16, V: int64(-30000)}},
		{"u32", U32(4000000000)},
		{"i32", Int32(-2000000000)},
		{"f32", Float(0.4)},
		{"bool", Bool(true)},
		{"str", Str("héllo")},
		{"u64", U64(1 << 40)},
		{"i64", Value{Type: TypeInt64, V: int64(-1 << 40)}},
		{"f64", Value{Type: TypeFloat64, V: 0.1}},
		{"arr", Arr(TypeString, Str("a"), Str(""), Str("ccc"))},
		{"nested", Arr(TypeArray, Arr(TypeInt32, Int32(1), Int32(2)), Arr(TypeInt32))},
		{"bools", Arr(TypeBool, Bool(true), Bool(false))},
	}
	ts := []WriteTensor{
		{Name: "a.weight", Shape: []int{2, 256}, Type: Q4_K, Data: q4k},
		{Name: "b.weight", Shape: []int{2, 32}, Type: Q8_0, Data: q80},
		{Name: "c", Shape: []int{2, 3}, Type: F32, Data: f32},
	}
	var buf bytes.Buffer
	if err := Write(&buf, kvs, ts, alignment); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func parseBytes(b []byte) (*File, error) {
	return Parse(bytes.NewReader(b), int64(len(b)), "test.gguf")
}

func TestParse(t *testing.T) {
	for _, align := range []int{0, 64} {
		b := sample(t, align)
		f, err := parseBytes(b)
		if err != nil {
			t.Fatal(err)
		}
		if f.Version != 3 || len(f.Tensors) != 3 {
			t.Fatalf("version %d, %d tensors", f.Version, len(f.Tensors))
		}
		want := map[string]any{"u8": uint64(200), "i8": int64(-100), "u16": uint64(60000), "i16": int64(-30000),
			"u32": uint64(4000000000), "i32": int64(-2000000000), "f32": 0.4, "bool": true, "str": "héllo",
			"u64": uint64(1 << 40), "i64": int64(-1 << 40), "f64": 0.1}
		for k, v := range want {
			if got := f.Metadata[k].V; got != v {
				t.Errorf("%s = %#v, want %#v", k, got, v)
			}
		}
		if a := f.Metadata["arr"].Array; len(a) != 3 || a[2].V != "ccc" || a[1].V != "" {
			t.Errorf("arr = %+v", a)
		}
		if n := f.Metadata["nested"].Array; len(n) != 2 || len(n[0].Array) != 2 || n[0].Array[1].V != int64(2) || len(n[1].Array) != 0 {
			t.Errorf("nested = %+v", n)
		}
		wantAlign := uint64(32)
		if align == 64 {
			wantAlign = 64
		}
		if f.Alignment != wantAlign || f.DataOffset%wantAlign != 0 {
			t.Errorf("alignment %d, data offset %d", f.Alignment, f.DataOffset)
		}
		a, ok := f.Lookup("a.weight")
		if !ok || a.Dims[0] != 256 || a.Dims[1] != 2 || a.Shape()[0] != 2 || a.Type != Q4_K || a.Size != 288 {
			t.Fatalf("a.weight = %+v", a)
		}
		// Row reads equal the matching part of a whole read.
		all, err := f.Float32(a, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		row1, err := f.Float32(a, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range row1 {
			if all[256+i] != v {
				t.Fatalf("row 1 element %d: %v vs %v", i, v, all[256+i])
			}
		}
		if _, err := f.Float32(a, 1, 2); err == nil {
			t.Error("rows past the end: want an error")
		}
		c, _ := f.Lookup("c")
		vals, err := f.Float32(c, 0, -1)
		if err != nil || len(vals) != 6 {
			t.Fatalf("c: %v %v", vals, err)
		}
	}
}

// openSample writes sample(t, alignment) to a file and opens it (Open), closed when
// the test ends; path is the file's.
func openSample(t *testing.T, alignment int) (f *File, path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(path, sample(t, alignment), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, path
}

func TestOpen(t *testing.T) {
	f, _ := openSample(t, 0)
	b, _ := f.Lookup("b.weight")
	if v, err := f.Float32(b, 0, -1); err != nil || len(v) != 64 {
		t.Fatalf("b.weight: %d values, %v", len(v), err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.gguf")); err == nil {
		t.Error("missing file: want an error")
	}
}

// TestView: where Open maps the file (Unix), View gives each tensor's rows in place —
// ReadRaw's bytes, and a write to the file shows through, so they are no copy — and
// refuses rows out of range; without a mapping (Parse, or after Close) it declines, so
// callers read instead.
func TestView(t *testing.T) {
	f, path := openSample(t, 64)
	mapped := !mapfile.Off() // mapfile maps on Unix and Windows, unless turned off
	for _, ti := range f.Tensors {
		for _, rows := range [][2]int64{{0, -1}, {1, 1}, {0, 1}, {1, 0}} {
			v, ok, err := f.View(ti, rows[0], rows[1])
			want, rerr := f.ReadRaw(ti, rows[0], rows[1])
			if err != nil || rerr != nil || ok != mapped || ok && !bytes.Equal(v, want) {
				t.Fatalf("%s rows %v: View = %d bytes, %v, %v; ReadRaw %d bytes, %v", ti.Name, rows, len(v), ok, err, len(want), rerr)
			}
		}
		if _, _, err := f.View(ti, 1, 2); err == nil && mapped {
			t.Errorf("%s: rows [1, 3) of 2 viewed", ti.Name)
		}
	}
	if !mapped {
		return
	}
	a, _ := f.Lookup("a.weight")
	v, _, _ := f.View(a, 0, -1)
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte("in place")
	_, err = w.WriteAt(patch, int64(f.DataOffset+a.Offset)+100)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(v[100:100+len(patch)], patch) {
		t.Errorf("a write to the file does not show through the view: %q", v[100:100+len(patch)])
	}
	b, err := parseBytes(sample(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := b.View(b.Tensors[0], 0, -1); ok || err != nil {
		t.Errorf("a parsed file's View = %v, %v; want it to decline", ok, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := f.View(a, 0, -1); ok || err != nil {
		t.Errorf("View after Close = %v, %v; want it to decline", ok, err)
	}
}

// TestTruncated cuts the file at every length short of its last tensor's end: the
// header must fail to parse (or, cut inside the data, fail on the tensor range
// check), never panic.
func TestTruncated(t *testing.T) {
	b := sample(t, 0)
	f, err := parseBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	var end uint64 // the trailing padding after the last tensor may go
	for _, ti := range f.Tensors {
		end = max(end, f.DataOffset+ti.Offset+ti.Size)
	}
	for n := 0; n < int(end); n++ {
		if _, err := parseBytes(b[:n]); err == nil {
			t.Fatalf("file cut at %d of %d bytes parsed without error", n, len(b))
		}
	}
}

// header builds a raw header by hand for fault cases.
type header struct{ bytes.Buffer }

func (h *header) u32(v uint32) *header { binary.Write(h, binary.LittleEndian, v); return h }
func (h *header) u64(v uint64) *header { binary.Write(h, binary.LittleEndian, v); return h }
func (h *header) str(s string) *header { h.u64(uint64(len(s))); h.WriteString(s); return h }

func TestFaults(t *testing.T) {
	// One F32 tensor "t" [4] at offset off with type typ and dims dims.
	tensorFile := func(typ uint32, dims []uint64, off uint64, data int) []byte {
		h := &header{}
		h.WriteString("GGUF")
		h.u32(3).u64(1).u64(0)
		h.str("t").u32(uint32(len(dims)))
		for _, d := range dims {
			h.u64(d)
		}
		h.u32(typ).u64(off)
		for h.Len()%32 != 0 {
			h.WriteByte(0)
		}
		h.Write(make([]byte, data))
		return h.Bytes()
	}
	valid := tensorFile(0, []uint64{4}, 0, 16)
	if _, err := parseBytes(valid); err != nil {
		t.Fatalf("valid file: %v", err)
	}
	cases := []struct {
		name, want string
		b          []byte
	}{
		{"bad magic", "not a GGUF file", append([]byte("GGUX"), valid[4:]...)},
		{"version 1", "version 1", append([]byte("GGUF\x01\x00\x00\x00"), valid[8:]...)},
		{"version 9", "unsupported GGUF version", append([]byte("GGUF\x09\x00\x00\x00"), valid[8:]...)},
		{"big endian", "big-endian", append([]byte("GGUF\x00\x00\x00\x03"), valid[8:]...)},
		{"data out of range", "runs past the end", tensorFile(0, []uint64{4}, 0, 8)},
		{"offset out of range", "runs past the end", tensorFile(0, []uint64{4}, 1<<40, 16)},
		{"misaligned offset", "not aligned", tensorFile(0, []uint64{1}, 4, 16)},
		{"unknown type", "unknown ggml type", tensorFile(77, []uint64{4}, 0, 16)},
		{"zero dims", "0 dimensions", tensorFile(0, nil, 0, 16)},
		{"five dims", "5 dimensions", tensorFile(0, []uint64{1, 1, 1, 1, 1}, 0, 16)},
		{"dims overflow", "overflow", tensorFile(0, []uint64{1 << 40, 1 << 40}, 0, 16)},
		{"partial block", "block size", tensorFile(uint32(Q4_K), []uint64{100}, 0, 144)},
		{"huge tensor count", "cannot fit", (&header{}).appendRaw("GGUF").u32(3).u64(1 << 60).u64(0).Bytes()},
		{"huge kv count", "cannot fit", (&header{}).appendRaw("GGUF").u32(3).u64(0).u64(1 << 60).Bytes()},
		{"huge string", "truncated", (&header{}).appendRaw("GGUF").u32(3).u64(0).u64(1).u64(1 << 62).Bytes()},
		{"huge array", "cannot fit", (&header{}).appendRaw("GGUF").u32(3).u64(0).u64(1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeUint64)).u64(1 << 50).Bytes()},
		{"unknown value type", "unknown value type", (&header{}).appendRaw("GGUF").u32(3).u64(0).u64(1).str("k").u32(99).u64(0).Bytes()},
		{"deep arrays", "nested deeper", deepArrays()},
		{"bad alignment", "power of two", (&header{}).appendRaw("GGUF").u32(3).u64(0).u64(1).str("general.alignment").u32(uint32(TypeUint32)).u32(3).Bytes()},
		{"duplicate key", "appears twice", (&header{}).appendRaw("GGUF").u32(3).u64(0).u64(2).str("k").u32(uint32(TypeUint8)).appendRaw("\x01").str("k").u32(uint32(TypeUint8)).appendRaw("\x01").Bytes()},
		{"bad bool", "bool value", (&header{}).appendRaw("GGUF").u32(3).u64(0).u64(1).str("k").u32(uint32(TypeBool)).appendRaw("\x07").Bytes()},
	}
	for _, c := range cases {
		_, err := parseBytes(c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		} else if !strings.Contains(err.Error(), "test.gguf") {
			t.Errorf("%s: error %q does not name the file", c.name, err)
		}
	}
	// An unsupported but known type parses, and reading it names the tensor.
	f, err := parseBytes(tensorFile(uint32(IQ2_XS), []uint64{256}, 0, 74))
	if err != nil {
		t.Fatal(err)
	}
	tt, _ := f.Lookup("t")
	if _, err := f.Float32(tt, 0, -1); err == nil || !strings.Contains(err.Error(), "tensor t") || !strings.Contains(err.Error(), "IQ2_XS") {
		t.Errorf("reading IQ2_XS: %v", err)
	}
}

func (h *header) appendRaw(s string) *header { h.WriteString(s); return h }

func deepArrays() []byte {
	h := (&header{}).appendRaw("GGUF").u32(3).u64(0).u64(1).str("k").u32(uint32(TypeArray))
	for i := 0; i < 6; i++ {
		h.u32(uint32(TypeArray)).u64(1)
	}
	h.u32(uint32(TypeUint8)).u64(1).appendRaw("\x00")
	return h.Bytes()
}

// FuzzParse: any input parses or fails with an error, and a parsed file's tensors
// read or fail with an error: never a panic. The seeds run in every `go test`.
func FuzzParse(f *testing.F) {
	b := sample(f, 0)
	f.Add(b)
	f.Add(sample(f, 64))
	f.Add(b[:100])
	f.Add([]byte("GGUF"))
	f.Add(deepArrays())
	corrupt := append([]byte{}, b...)
	corrupt[30] ^= 0xff
	f.Add(corrupt)
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := parseBytes(data)
		if err != nil {
			return
		}
		for _, ti := range g.Tensors {
			if ti.Type.Supported() && ti.Size < 1<<20 {
				g.Float32(ti, 0, -1)
			}
		}
		if g.Metadata[keyArch].Type == TypeString {
			g.Config()
		}
	})
}
