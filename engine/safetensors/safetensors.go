// Package safetensors reads and writes the safetensors format: an 8-byte little-endian
// header length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__":
// {…}}, then the raw tensor bytes. Files are memory-mapped where the OS allows (a read
// into memory otherwise), can also come from an fs.FS or a byte slice (the embedded
// model), and sharded checkpoints are opened through model.safetensors.index.json.
//
// Every malformed input — a truncated file, a bad header, offsets out of range or
// overlapping, a shape that does not match its bytes — is an error naming the file and
// the tensor, never a panic. The Writer streams tensors one at a time and publishes the
// file atomically (temp file + rename).
//
// Tensor data is little-endian, as on every platform Go's GoMLX backends run on.
//
// The 8-bit float dtypes F8_E4M3 (PyTorch float8_e4m3fn: bias 7, no infinities, NaN
// = S.1111.111, max 448) and F8_E5M2 (float8_e5m2: IEEE-like, bias 15, with
// infinities) are read and widened to Float32 exactly, as F16 is: GoMLX's pure-Go
// backend has no 8-bit float types. They are the block scales of NVIDIA ModelOpt's
// NVFP4 checkpoints (see engine/weights' ModelOpt loader).
package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/darkroomlabs/darkroom/engine/mapfile"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// DType is a safetensors dtype string.
type DType string

// Supported dtypes.
const (
	F32  DType = "F32"
	BF16 DType = "BF16"
	F16  DType = "F16"
	I8   DType = "I8"
	U8   DType = "U8"
	I32  DType = "I32"
	I64  DType = "I64"
	// F8E4M3 and F8E5M2 are read only (widened to Float32); the names are the
	// safetensors spec's (Rust crate `safetensors::Dtype::{F8_E4M3, F8_E5M2}`).
	F8E4M3 DType = "F8_E4M3"
	F8E5M2 DType = "F8_E5M2"
)

// Size is the bytes per element, 0 for an unknown dtype.
func (d DType) Size() int {
	switch d {
	case F32, I32:
		return 4
	case BF16, F16:
		return 2
	case I8, U8, F8E4M3, F8E5M2:
		return 1
	case I64:
		return 8
	}
	return 0
}

// GoMLX is the dtype a tensor of this dtype becomes when loaded (F16, F8_E4M3 and
// F8_E5M2 → Float32: the go backend has no Float16 or 8-bit floats).
func (d DType) GoMLX() dtypes.DType {
	switch d {
	case F32, F16, F8E4M3, F8E5M2:
		return dtypes.Float32
	case BF16:
		return dtypes.BFloat16
	case I8:
		return dtypes.Int8
	case U8:
		return dtypes.Uint8
	case I32:
		return dtypes.Int32
	case I64:
		return dtypes.Int64
	}
	return dtypes.InvalidDType
}

// FromGoMLX is the safetensors dtype storing a GoMLX dtype as is.
func FromGoMLX(d dtypes.DType) (DType, error) {
	switch d {
	case dtypes.Float32:
		return F32, nil
	case dtypes.BFloat16:
		return BF16, nil
	case dtypes.Int8:
		return I8, nil
	case dtypes.Uint8:
		return U8, nil
	case dtypes.Int32:
		return I32, nil
	case dtypes.Int64:
		return I64, nil
	}
	return "", fmt.Errorf("dtype %s cannot be stored in safetensors here", d)
}

// Info describes one tensor in a file.
type Info struct {
	Name  string
	DType DType
	Shape []int
	// Begin and End are byte offsets into the data section (after the header).
	Begin, End int64
}

// NumElements is the product of the shape.
func (i Info) NumElements() int64 { return Elements(i.Shape) }

// Elements is a tensor's element count, the product of its shape (1 for a
// scalar's empty shape), counted in int64.
func Elements(shape []int) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= int64(d)
	}
	return n
}

// MaxHeaderSize bounds the JSON header (as the reference implementation does).
const MaxHeaderSize = 100 << 20

// File is one open safetensors file.
type File struct {
	// Name is how errors refer to the file (its base name or path).
	Name     string
	Metadata map[string]string

	infos  map[string]Info
	order  []string // by offset
	data   []byte   // the data section
	unmap  func() error
	closed bool
}

// Open opens and memory-maps path (reading it into memory where mapping fails).
func Open(path string) (*File, error) { return openCounted(path, nil) }

// openCounted is Open, with read hearing the bytes read so far where the file is read
// rather than mapped (mapfile.MapOrRead).
func openCounted(path string, read func(done int64)) (*File, error) {
	name := filepath.Base(path)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if st.Size() > math.MaxInt {
		return nil, fmt.Errorf("%s: file too large", name)
	}
	buf, unmap, err := mapfile.MapOrRead(f, st.Size(), read)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	sf, err := parse(name, buf)
	if err != nil {
		if unmap != nil {
			_ = unmap()
		}
		return nil, err
	}
	sf.unmap = unmap
	return sf, nil
}

// OpenFS opens name in fsys. A file that implements io.ReaderAt with a known size
// (embed.FS files do not) is still read fully: fs.FS gives no mapping.
func OpenFS(fsys fs.FS, name string) (*File, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	return FromBytes(name, b)
}

// FromBytes parses a whole safetensors file held in memory; name is used in errors.
// The File keeps b (no copy).
func FromBytes(name string, b []byte) (*File, error) {
	return parse(name, b)
}

type headerEntry struct {
	DType       DType    `json:"dtype"`
	Shape       []int64  `json:"shape"`
	DataOffsets []uint64 `json:"data_offsets"`
}

// ParseHeader decodes a safetensors header for a data section of dataSize bytes and
// checks every entry against it. It is exported for the fuzz test and for tools that
// only need the index of a file.
func ParseHeader(name string, header []byte, dataSize int64) (infos []Info, meta map[string]string, err error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		return nil, nil, fmt.Errorf("%s: malformed header: %v", name, err)
	}
	for k, v := range raw {
		if k == "__metadata__" {
			if err := json.Unmarshal(v, &meta); err != nil {
				return nil, nil, fmt.Errorf("%s: malformed __metadata__ (want string values): %v", name, err)
			}
			continue
		}
		var e headerEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return nil, nil, fmt.Errorf("%s: tensor %s: malformed header entry: %v", name, k, err)
		}
		info, err := checkEntry(k, e, dataSize)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: tensor %s: %w", name, k, err)
		}
		infos = append(infos, info)
	}
	sort.Slice(infos, func(i, j int) bool {
		if infos[i].Begin != infos[j].Begin {
			return infos[i].Begin < infos[j].Begin
		}
		return infos[i].Name < infos[j].Name
	})
	for i := 1; i < len(infos); i++ {
		if infos[i].Begin < infos[i-1].End {
			return nil, nil, fmt.Errorf("%s: tensor %s: data_offsets [%d %d] overlap tensor %s [%d %d]", name,
				infos[i].Name, infos[i].Begin, infos[i].End, infos[i-1].Name, infos[i-1].Begin, infos[i-1].End)
		}
	}
	return infos, meta, nil
}

func checkEntry(name string, e headerEntry, dataSize int64) (Info, error) {
	info := Info{Name: name, DType: e.DType}
	if e.DType.Size() == 0 {
		return info, fmt.Errorf("unsupported dtype %q", e.DType)
	}
	if e.Shape == nil {
		return info, fmt.Errorf("shape is missing")
	}
	n := int64(1)
	for _, d := range e.Shape {
		if d < 0 || d > math.MaxInt32 {
			return info, fmt.Errorf("bad shape %v", e.Shape)
		}
		info.Shape = append(info.Shape, int(d))
		if d != 0 && n > math.MaxInt64/8/d {
			return info, fmt.Errorf("shape %v is too large", e.Shape)
		}
		n *= d
	}
	if len(e.DataOffsets) != 2 {
		return info, fmt.Errorf("data_offsets must have 2 entries, got %d", len(e.DataOffsets))
	}
	b, end := e.DataOffsets[0], e.DataOffsets[1]
	if b > end || end > uint64(dataSize) {
		return info, fmt.Errorf("data_offsets [%d %d] out of range: data section has %d bytes (truncated file?)", b, end, dataSize)
	}
	info.Begin, info.End = int64(b), int64(end)
	if want := n * int64(e.DType.Size()); info.End-info.Begin != want {
		return info, fmt.Errorf("shape %v of %s needs %d bytes, data_offsets [%d %d] hold %d", info.Shape, e.DType, want, b, end, end-b)
	}
	return info, nil
}

// headerLength is the header length a file of size bytes starts with (its first 8
// bytes, prefix), checked against MaxHeaderSize and the file.
func headerLength(name string, prefix []byte, size int64) (uint64, error) {
	if size < 8 || len(prefix) < 8 {
		return 0, fmt.Errorf("%s: too short for a safetensors file (%d bytes)", name, size)
	}
	n := binary.LittleEndian.Uint64(prefix[:8])
	if n > MaxHeaderSize {
		return 0, fmt.Errorf("%s: header length %d is too large (malformed or not a safetensors file)", name, n)
	}
	if n > uint64(size-8) {
		return 0, fmt.Errorf("%s: header length %d exceeds the file (%d bytes; truncated?)", name, n, size)
	}
	return n, nil
}

// ReadInfosFS reads only the header of the safetensors file name in fsys — the
// tensors' names, dtypes and shapes, checked against the file's size — not their
// data.
func ReadInfosFS(fsys fs.FS, name string) ([]Info, error) {
	file, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	prefix := make([]byte, 8)
	if _, err := io.ReadFull(file, prefix); err != nil && st.Size() >= 8 {
		return nil, fmt.Errorf("%s: header length: %w", name, err)
	}
	n, err := headerLength(name, prefix, st.Size())
	if err != nil {
		return nil, err
	}
	header := make([]byte, n)
	if _, err := io.ReadFull(file, header); err != nil {
		return nil, fmt.Errorf("%s: header: %w", name, err)
	}
	infos, _, err := ParseHeader(name, header, st.Size()-8-int64(n))
	return infos, err
}

func parse(name string, buf []byte) (*File, error) {
	n, err := headerLength(name, buf, int64(len(buf)))
	if err != nil {
		return nil, err
	}
	data := buf[8+n:]
	infos, meta, err := ParseHeader(name, buf[8:8+n], int64(len(data)))
	if err != nil {
		return nil, err
	}
	f := &File{Name: name, Metadata: meta, infos: map[string]Info{}, data: data}
	for _, in := range infos {
		f.infos[in.Name] = in
		f.order = append(f.order, in.Name)
	}
	return f, nil
}

// Names lists the tensors in file order.
func (f *File) Names() []string { return append([]string(nil), f.order...) }

// Info describes a tensor.
func (f *File) Info(name string) (Info, bool) {
	i, ok := f.infos[name]
	return i, ok
}

// Raw returns a tensor's bytes as stored (a view into the mapping: valid until Close,
// must not be modified).
func (f *File) Raw(name string) ([]byte, error) {
	if f.closed {
		return nil, fmt.Errorf("%s: file is closed", f.Name)
	}
	i, ok := f.infos[name]
	if !ok {
		return nil, fmt.Errorf("%s: missing tensor %s", f.Name, name)
	}
	return f.data[i.Begin:i.End], nil
}

// Tensor loads a tensor into a new GoMLX tensor (F16 converted to Float32; every other
// dtype kept).
func (f *File) Tensor(name string) (*tensors.Tensor, error) {
	raw, err := f.Raw(name)
	if err != nil {
		return nil, err
	}
	i := f.infos[name]
	t, err := Decode(i.DType, i.Shape, raw)
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %s: %w", f.Name, name, err)
	}
	return t, nil
}

// Close releases the mapping. Tensors already loaded stay valid; Raw views do not.
func (f *File) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	f.data = nil
	if f.unmap != nil {
		return f.unmap()
	}
	return nil
}

// Decode builds a GoMLX tensor from raw little-endian bytes (F16, F8_E4M3 and
// F8_E5M2 → Float32, exactly).
func Decode(dt DType, shape []int, raw []byte) (t *tensors.Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decode %s %v: %v", dt, shape, r)
		}
	}()
	gd := dt.GoMLX()
	if gd == dtypes.InvalidDType {
		return nil, fmt.Errorf("unsupported dtype %q", dt)
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	if len(raw) != n*dt.Size() {
		return nil, fmt.Errorf("shape %v of %s needs %d bytes, have %d", shape, dt, n*dt.Size(), len(raw))
	}
	t = tensors.FromShape(shapes.Make(gd, shape...))
	if n == 0 {
		return t, nil
	}
	switch dt {
	case F16:
		tensors.MutableFlatData(t, func(flat []float32) {
			for i := range flat {
				flat[i] = F16ToF32(binary.LittleEndian.Uint16(raw[2*i:]))
			}
		})
		return t, nil
	case F8E4M3, F8E5M2:
		conv := F8E4M3ToF32
		if dt == F8E5M2 {
			conv = F8E5M2ToF32
		}
		tensors.MutableFlatData(t, func(flat []float32) {
			for i := range flat {
				flat[i] = conv(raw[i])
			}
		})
		return t, nil
	}
	err = t.MutableBytes(func(b []byte) { copy(b, raw) })
	return t, err
}

// Encode returns a tensor's dtype, shape and bytes as stored in safetensors.
func Encode(t *tensors.Tensor) (DType, []int, []byte, error) {
	dt, err := FromGoMLX(t.DType())
	if err != nil {
		return "", nil, nil, err
	}
	shape := t.Shape().Dimensions
	out := make([]byte, t.Shape().Size()*dt.Size())
	if len(out) > 0 {
		if err := t.ConstBytes(func(b []byte) { copy(out, b) }); err != nil {
			return "", nil, nil, err
		}
	}
	return dt, append([]int{}, shape...), out, nil
}

// F16ToF32 converts an IEEE half-precision value.
func F16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf, nan
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// subnormal: value = mant · 2^-24
		f := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// F8E4M3ToF32 converts a float8_e4m3fn value (OCP FP8 E4M3, as PyTorch's
// torch.float8_e4m3fn and safetensors' F8_E4M3): 1 sign, 4 exponent bits (bias 7), 3
// mantissa bits; exponent 0 is subnormal (m·2⁻⁹); S.1111.111 is NaN and there are no
// infinities, so the largest value is S.1111.110 = 448. Exact in float32.
func F8E4M3ToF32(b byte) float32 {
	e, m := int(b>>3)&0xf, int(b&7)
	var v float32
	switch {
	case e == 0xf && m == 7:
		v = float32(math.NaN())
	case e == 0:
		v = float32(m) / 512 // m · 2⁻³ · 2⁻⁶
	default:
		v = float32(math.Ldexp(float64(8+m)/8, e-7))
	}
	if b&0x80 != 0 {
		return -v
	}
	return v
}

// F8E5M2ToF32 converts a float8_e5m2 value (OCP FP8 E5M2, torch.float8_e5m2): 1 sign,
// 5 exponent bits (bias 15), 2 mantissa bits, IEEE-style infinities and NaNs; it is
// the top byte of an IEEE half. Exact in float32.
func F8E5M2ToF32(b byte) float32 {
	return F16ToF32(uint16(b) << 8)
}

// F32ToF16 converts to IEEE half precision (round to nearest even); used by tests and
// tools that write F16.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - e)
		half := uint32(1) << (shift - 1)
		v := mant >> shift
		rem := mant & ((1 << shift) - 1)
		if rem > half || (rem == half && v&1 == 1) {
			v++
		}
		return sign | uint16(v)
	}
	v := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && v&1 == 1) {
		v++
	}
	return sign | uint16(v)
}
