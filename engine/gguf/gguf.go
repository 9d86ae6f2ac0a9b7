// Package gguf reads GGUF files (llama.cpp's model format, versions 2 and 3): the
// header, the metadata key/value pairs (every value type, arrays included), the tensor
// table, and tensor data read by ReadAt one tensor at a time, never the whole file, or
// viewed in place where Open could map the file (View). It dequantizes the ggml block
// formats a Q2_K … BF16 file holds (SupportedNames: F32, F16, BF16, Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) to float32, names llama.cpp's
// quantization mixes (Mix; engine/weights' GGUFType says each tensor's type in one),
// and maps llama.cpp's `diffusion-gemma` tensor names and metadata onto Darkroom's
// canonical names and config.Model (names.go, config.go).
//
// Format reference: ggml's docs/gguf.md and ggml/src/gguf.cpp (ggml-org/ggml,
// ggml-org/llama.cpp). Every count and length in the header is checked against the
// bytes left in the file before anything is allocated, so a truncated or hostile file
// gives an error, never a panic or a huge allocation.
package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"sort"
	"strconv"

	"github.com/darkroomlabs/darkroom/engine/mapfile"
)

// Magic is the first four bytes of a GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the data alignment when general.alignment is absent.
const DefaultAlignment = 32

// maxDims is ggml's GGML_MAX_DIMS.
const maxDims = 4

// maxNesting bounds arrays of arrays in metadata.
const maxNesting = 4

// maxArrayElems bounds the metadata array elements of one file (a real DiffusionGemma
// GGUF has about 1.3M: tokens, scores, types and merges), so that a hostile file
// cannot turn a few bytes per element into ~64 bytes of Value each without limit.
const maxArrayElems = 1 << 23

// ValueType is a metadata value's type (gguf_type in gguf.h).
type ValueType uint32

// Metadata value types.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = map[ValueType]string{
	TypeUint8: "uint8", TypeInt8: "int8", TypeUint16: "uint16", TypeInt16: "int16", TypeUint32: "uint32",
	TypeInt32: "int32", TypeFloat32: "float32", TypeBool: "bool", TypeString: "string", TypeArray: "array",
	TypeUint64: "uint64", TypeInt64: "int64", TypeFloat64: "float64",
}

func (t ValueType) String() string {
	if n, ok := valueTypeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// fixedSize is the encoded size of a scalar type (0 for string and array).
func (t ValueType) fixedSize() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// Value is one metadata value. Scalars hold uint64, int64, float64, bool or string
// (V); arrays hold their element type and elements (Elem, Array).
type Value struct {
	Type  ValueType
	V     any       // scalar value: uint64 (unsigned), int64 (signed), float64, bool, string
	Elem  ValueType // element type of an array
	Array []Value
}

// Int returns an integer value (any integer type, or a whole float); ok is false otherwise.
func (v Value) Int() (int64, bool) {
	switch x := v.V.(type) {
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case int64:
		return x, true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
	}
	return 0, false
}

// Float returns a numeric value as float64.
func (v Value) Float() (float64, bool) {
	switch x := v.V.(type) {
	case uint64:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// Str returns a string value.
func (v Value) Str() (string, bool) {
	s, ok := v.V.(string)
	return s, ok
}

// Bool returns a bool value.
func (v Value) Bool() (bool, bool) {
	b, ok := v.V.(bool)
	return b, ok
}

// TensorInfo is one entry of the tensor table.
type TensorInfo struct {
	Name string
	// Dims as GGUF stores them: innermost (fastest-varying) first, i.e. ggml's ne[0],
	// ne[1], …. Shape() gives the row-major shape (outermost first).
	Dims   []uint64
	Type   Type
	Offset uint64 // from the start of the data section
	Size   uint64 // bytes of data
}

// Shape is the row-major shape (PyTorch / safetensors order): Dims reversed.
func (t TensorInfo) Shape() []int {
	s := make([]int, len(t.Dims))
	for i, d := range t.Dims {
		s[len(t.Dims)-1-i] = int(d)
	}
	return s
}

// Elements is the number of elements.
func (t TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// File is an open GGUF file: its header parsed, its data read on demand.
type File struct {
	Path       string // for messages
	Version    uint32
	Metadata   map[string]Value
	Keys       []string // metadata keys in file order
	Tensors    []TensorInfo
	Alignment  uint64
	DataOffset uint64 // where the data section starts

	byName map[string]int
	r      io.ReaderAt
	size   int64
	closer io.Closer
	mapped []byte       // the whole file, where Open mapped it (View)
	unmap  func() error // releases mapped
}

// Open opens and parses the GGUF file at path. Close releases it.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("gguf: %w", err)
	}
	g, err := Parse(f, st.Size(), path)
	if err != nil {
		f.Close()
		return nil, err
	}
	g.closer = f
	if b, unmap, err := mapfile.Map(f, st.Size()); err == nil { // else View declines: read instead
		g.mapped, g.unmap = b, unmap
	}
	return g, nil
}

// Close closes the underlying file (if Open opened it) and releases its mapping: the
// views View gave are invalid after it.
func (f *File) Close() error {
	var err error
	if f.unmap != nil {
		err = f.unmap()
		f.mapped, f.unmap = nil, nil
	}
	if f.closer != nil {
		err = errors.Join(err, f.closer.Close())
		f.closer = nil
	}
	return err
}

// Parse reads the header of a GGUF file of size bytes from r; name is used in errors.
// Tensor data stays in r and is read by ReadTensor/Float32.
func Parse(r io.ReaderAt, size int64, name string) (*File, error) {
	f := &File{Path: name, r: r, size: size, Metadata: map[string]Value{}, byName: map[string]int{}}
	if err := f.parse(); err != nil {
		return nil, fmt.Errorf("gguf %s: %w", name, err)
	}
	return f, nil
}

// reader reads the header sequentially, knowing how many bytes are left.
type reader struct {
	br    *bufio.Reader
	pos   int64
	size  int64
	elems int64 // metadata array elements read so far
}

var errTruncated = errors.New("file is truncated")

func (r *reader) left() int64 { return r.size - r.pos }

func (r *reader) bytes(n int64) ([]byte, error) {
	if n < 0 || n > r.left() {
		return nil, fmt.Errorf("%w (need %d bytes at offset %d, %d left)", errTruncated, n, r.pos, r.left())
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.br, b); err != nil {
		return nil, fmt.Errorf("read at offset %d: %w", r.pos, err)
	}
	r.pos += n
	return b, nil
}

func (r *reader) u32() (uint32, error) {
	b, err := r.bytes(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *reader) u64() (uint64, error) {
	b, err := r.bytes(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (r *reader) str() (string, error) {
	n, err := r.u64()
	if err != nil {
		return "", err
	}
	if n > uint64(r.left()) {
		return "", fmt.Errorf("%w (string of %d bytes at offset %d, %d left)", errTruncated, n, r.pos, r.left())
	}
	b, err := r.bytes(int64(n))
	return string(b), err
}

// count reads a uint64 count of items of at least minSize bytes each and checks
// that they fit in the bytes left.
func (r *reader) count(what string, minSize int64) (uint64, error) {
	n, err := r.u64()
	if err != nil {
		return 0, err
	}
	if minSize > 0 && n > uint64(r.left()/minSize) {
		return 0, fmt.Errorf("%w: %d %s cannot fit in the %d bytes left", errTruncated, n, what, r.left())
	}
	return n, nil
}

func (r *reader) scalar(t ValueType) (any, error) {
	b, err := r.bytes(int64(t.fixedSize()))
	if err != nil {
		return nil, err
	}
	switch t {
	case TypeUint8:
		return uint64(b[0]), nil
	case TypeInt8:
		return int64(int8(b[0])), nil
	case TypeUint16:
		return uint64(binary.LittleEndian.Uint16(b)), nil
	case TypeInt16:
		return int64(int16(binary.LittleEndian.Uint16(b))), nil
	case TypeUint32:
		return uint64(binary.LittleEndian.Uint32(b)), nil
	case TypeInt32:
		return int64(int32(binary.LittleEndian.Uint32(b))), nil
	case TypeFloat32:
		// The shortest decimal of the float32 (0.4, not 0.4000000059604645).
		f32 := math.Float32frombits(binary.LittleEndian.Uint32(b))
		f64, err := strconv.ParseFloat(strconv.FormatFloat(float64(f32), 'g', -1, 32), 64)
		if err != nil { // NaN, ±Inf
			f64 = float64(f32)
		}
		return f64, nil
	case TypeBool:
		if b[0] > 1 {
			return nil, fmt.Errorf("bool value %d at offset %d", b[0], r.pos-1)
		}
		return b[0] == 1, nil
	case TypeUint64:
		return binary.LittleEndian.Uint64(b), nil
	case TypeInt64:
		return int64(binary.LittleEndian.Uint64(b)), nil
	case TypeFloat64:
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
	}
	return nil, fmt.Errorf("unknown value type %d", uint32(t))
}

func (r *reader) value(t ValueType, depth int) (Value, error) {
	v := Value{Type: t}
	switch {
	case t == TypeString:
		s, err := r.str()
		v.V = s
		return v, err
	case t == TypeArray:
		if depth >= maxNesting {
			return v, fmt.Errorf("arrays nested deeper than %d", maxNesting)
		}
		et, err := r.u32()
		if err != nil {
			return v, err
		}
		v.Elem = ValueType(et)
		min := int64(v.Elem.fixedSize())
		switch v.Elem {
		case TypeString:
			min = 8
		case TypeArray:
			min = 12
		default:
			if min == 0 {
				return v, fmt.Errorf("array of unknown value type %d", et)
			}
		}
		n, err := r.count("array elements", min)
		if err != nil {
			return v, err
		}
		if r.elems += int64(n); r.elems > maxArrayElems {
			return v, fmt.Errorf("metadata arrays hold more than %d elements", maxArrayElems)
		}
		v.Array = make([]Value, n)
		for i := range v.Array {
			if v.Array[i], err = r.value(v.Elem, depth+1); err != nil {
				return v, err
			}
		}
		return v, nil
	case t.fixedSize() > 0:
		x, err := r.scalar(t)
		v.V = x
		return v, err
	}
	return v, fmt.Errorf("unknown value type %d", uint32(t))
}

func (f *File) parse() error {
	r := &reader{br: bufio.NewReaderSize(io.NewSectionReader(f.r, 0, f.size), 1<<16), size: f.size}
	magic, err := r.bytes(4)
	if err != nil {
		return fmt.Errorf("not a GGUF file: %w", err)
	}
	if string(magic) != Magic {
		return fmt.Errorf("not a GGUF file (magic %q, want %q)", magic, Magic)
	}
	if f.Version, err = r.u32(); err != nil {
		return err
	}
	switch {
	case f.Version == 2 || f.Version == 3:
	case f.Version == 1:
		return fmt.Errorf("GGUF version 1 is not supported (32-bit counts; convert it with a current llama.cpp)")
	case bits.ReverseBytes32(f.Version) == 2 || bits.ReverseBytes32(f.Version) == 3:
		return fmt.Errorf("big-endian GGUF is not supported")
	default:
		return fmt.Errorf("unsupported GGUF version %d (want 2 or 3)", f.Version)
	}
	// A tensor info is at least name length (8) + n_dims (4) + type (4) + offset (8);
	// a KV pair at least key length (8) + type (4) + one byte.
	nTensors, err := r.count("tensors", 24)
	if err != nil {
		return err
	}
	nKV, err := r.count("metadata pairs", 13)
	if err != nil {
		return err
	}
	for i := uint64(0); i < nKV; i++ {
		key, err := r.str()
		if err != nil {
			return fmt.Errorf("metadata pair %d: %w", i, err)
		}
		t, err := r.u32()
		if err != nil {
			return fmt.Errorf("metadata %q: %w", key, err)
		}
		v, err := r.value(ValueType(t), 0)
		if err != nil {
			return fmt.Errorf("metadata %q: %w", key, err)
		}
		if _, dup := f.Metadata[key]; dup {
			return fmt.Errorf("metadata key %q appears twice", key)
		}
		f.Metadata[key] = v
		f.Keys = append(f.Keys, key)
	}
	f.Alignment = DefaultAlignment
	if v, ok := f.Metadata["general.alignment"]; ok {
		a, ok := v.Int()
		if !ok || a <= 0 || a&(a-1) != 0 || a > 1<<20 {
			return fmt.Errorf("general.alignment %v is not a power of two", v.V)
		}
		f.Alignment = uint64(a)
	}
	f.Tensors = make([]TensorInfo, nTensors)
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Name, err = r.str(); err != nil {
			return fmt.Errorf("tensor %d: %w", i, err)
		}
		nd, err := r.u32()
		if err != nil {
			return fmt.Errorf("tensor %s: %w", t.Name, err)
		}
		if nd == 0 || nd > maxDims {
			return fmt.Errorf("tensor %s has %d dimensions (want 1…%d)", t.Name, nd, maxDims)
		}
		t.Dims = make([]uint64, nd)
		for j := range t.Dims {
			if t.Dims[j], err = r.u64(); err != nil {
				return fmt.Errorf("tensor %s: %w", t.Name, err)
			}
		}
		typ, err := r.u32()
		if err != nil {
			return fmt.Errorf("tensor %s: %w", t.Name, err)
		}
		t.Type = Type(typ)
		if t.Offset, err = r.u64(); err != nil {
			return fmt.Errorf("tensor %s: %w", t.Name, err)
		}
		if _, dup := f.byName[t.Name]; dup {
			return fmt.Errorf("tensor %s appears twice", t.Name)
		}
		f.byName[t.Name] = i
	}
	f.DataOffset = alignUp(uint64(r.pos), f.Alignment)
	if f.DataOffset > uint64(f.size) {
		return fmt.Errorf("%w: data section starts at %d, past the end (%d bytes)", errTruncated, f.DataOffset, f.size)
	}
	dataLen := uint64(f.size) - f.DataOffset
	for i := range f.Tensors {
		t := &f.Tensors[i]
		size, err := tensorSize(t.Dims, t.Type)
		if err != nil {
			return fmt.Errorf("tensor %s: %w", t.Name, err)
		}
		t.Size = size
		if t.Offset%f.Alignment != 0 {
			return fmt.Errorf("tensor %s: data offset %d is not aligned to %d", t.Name, t.Offset, f.Alignment)
		}
		if t.Offset > dataLen || size > dataLen-t.Offset {
			return fmt.Errorf("tensor %s: data [%d, +%d) runs past the end of the data section (%d bytes)",
				t.Name, t.Offset, size, dataLen)
		}
	}
	return nil
}

func alignUp(x, a uint64) uint64 { return (x + a - 1) / a * a }

// tensorSize checks dims against the type's block size and returns the data size.
func tensorSize(dims []uint64, t Type) (uint64, error) {
	info, ok := t.info()
	if !ok {
		return 0, fmt.Errorf("unknown ggml type %d", uint32(t))
	}
	n := uint64(1)
	for _, d := range dims {
		hi, lo := bits.Mul64(n, d)
		if hi != 0 || lo > 1<<62 {
			return 0, fmt.Errorf("dimensions %v overflow", dims)
		}
		n = lo
	}
	if dims[0]%uint64(info.blockSize) != 0 {
		return 0, fmt.Errorf("row length %d is not a multiple of %s's block size %d", dims[0], t, info.blockSize)
	}
	hi, lo := bits.Mul64(n/uint64(info.blockSize), uint64(info.typeSize))
	if hi != 0 {
		return 0, fmt.Errorf("dimensions %v overflow", dims)
	}
	return lo, nil
}

// Lookup finds a tensor by name.
func (f *File) Lookup(name string) (TensorInfo, bool) {
	i, ok := f.byName[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Tensors[i], true
}

// Names lists the tensor names, sorted.
func (f *File) Names() []string {
	out := make([]string, len(f.Tensors))
	for i, t := range f.Tensors {
		out[i] = t.Name
	}
	sort.Strings(out)
	return out
}

// ReadRaw reads rows [row0, row0+rows) of tensor t's raw (still quantized) bytes; a
// row is Dims[0] elements. rows < 0 reads to the end.
func (f *File) ReadRaw(t TensorInfo, row0, rows int64) ([]byte, error) {
	return f.ReadRawInto(nil, t, row0, rows)
}

// View is rows [row0, row0+rows) of tensor t's raw bytes as ReadRaw reads them, but
// in place: a view of the file mapped into memory (package mapfile), valid until Close
// and never to be written. ok is false where Open did not map the file (Parse, a
// system or file system that does not map): read it with ReadRaw instead.
func (f *File) View(t TensorInfo, row0, rows int64) (b []byte, ok bool, err error) {
	if f.mapped == nil {
		return nil, false, nil
	}
	off, n, err := f.span(t, row0, rows)
	if err != nil {
		return nil, false, err
	}
	if off+n > int64(len(f.mapped)) { // Parse checked the tensor against the file's size
		return nil, false, fmt.Errorf("gguf %s: tensor %s: %d bytes at %d past the mapping's %d", f.Path, t.Name, n, off, len(f.mapped))
	}
	return f.mapped[off : off+n : off+n], true, nil
}

// Mapped reports whether Open mapped the file, so that View gives views of it.
func (f *File) Mapped() bool { return f.mapped != nil }

// span is where rows [row0, row0+rows) of tensor t lie in the file (rows < 0: to the
// end): their offset and length in bytes.
func (f *File) span(t TensorInfo, row0, rows int64) (off, n int64, err error) {
	rowBytes, nRows := t.rowBytes()
	if rows < 0 {
		rows = nRows - row0
	}
	if row0 < 0 || rows < 0 || row0+rows > nRows {
		return 0, 0, fmt.Errorf("gguf %s: tensor %s: rows [%d, %d) out of range (%d rows)", f.Path, t.Name, row0, row0+rows, nRows)
	}
	return int64(f.DataOffset+t.Offset) + row0*rowBytes, rows * rowBytes, nil
}

// ReadRawInto is ReadRaw into buf when it has the capacity (a reader converting a
// tensor a chunk at a time reuses one buffer instead of leaving the whole tensor's
// bytes behind as garbage), else into a new slice.
func (f *File) ReadRawInto(buf []byte, t TensorInfo, row0, rows int64) ([]byte, error) {
	off, n, err := f.span(t, row0, rows)
	if err != nil {
		return nil, err
	}
	b := buf[:0]
	if int64(cap(b)) >= n {
		b = b[:n]
	} else {
		b = make([]byte, n)
	}
	if _, err := f.r.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("gguf %s: tensor %s: read %d bytes at %d: %w", f.Path, t.Name, len(b), off, err)
	}
	return b, nil
}

// rowBytes is the byte size of one row (Dims[0] elements) and the number of rows.
func (t TensorInfo) rowBytes() (rowBytes, rows int64) {
	info, _ := t.Type.info()
	rowBytes = int64(t.Dims[0]) / int64(info.blockSize) * int64(info.typeSize)
	rows = 1
	for _, d := range t.Dims[1:] {
		rows *= int64(d)
	}
	return
}

// Rows is the number of rows (elements / Dims[0]).
func (t TensorInfo) Rows() int64 {
	_, r := t.rowBytes()
	return r
}

// Float32 reads rows [row0, row0+rows) of tensor t dequantized to float32 (rows < 0:
// to the end).
func (f *File) Float32(t TensorInfo, row0, rows int64) ([]float32, error) {
	raw, err := f.ReadRaw(t, row0, rows)
	if err != nil {
		return nil, err
	}
	n := int64(len(raw)) / int64(t.Type.mustInfo().typeSize) * int64(t.Type.mustInfo().blockSize)
	out := make([]float32, n)
	if err := Dequantize(t.Type, raw, out); err != nil {
		return nil, fmt.Errorf("gguf %s: tensor %s: %w", f.Path, t.Name, err)
	}
	return out, nil
}
