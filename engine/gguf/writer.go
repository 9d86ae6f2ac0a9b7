package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// KV is one metadata pair to write.
type KV struct {
	Key   string
	Value Value
}

// WriteTensor is one tensor to write: Shape is row-major (outermost first, like
// TensorInfo.Shape); Data holds its encoded blocks (see Quantize), or, when Data is
// nil, Stream writes them when the tensor's turn comes — exactly the tensor's size in
// bytes (Size), so that a file larger than memory is written a piece at a time.
type WriteTensor struct {
	Name   string
	Shape  []int
	Type   Type
	Data   []byte
	Stream func(w io.Writer) error
}

// Size is the tensor's encoded size in bytes, or an error when its rows (the
// innermost dimension) are no whole number of its type's blocks, which a reader
// refuses.
func (t WriteTensor) Size() (int64, error) {
	info, ok := t.Type.info()
	if !ok || len(t.Shape) == 0 || len(t.Shape) > maxDims {
		return 0, fmt.Errorf("tensor %s: type %s, shape %v", t.Name, t.Type, t.Shape)
	}
	n := int64(1)
	for _, d := range t.Shape {
		if d <= 0 {
			return 0, fmt.Errorf("tensor %s: shape %v", t.Name, t.Shape)
		}
		n *= int64(d)
	}
	if row := t.Shape[len(t.Shape)-1]; row%info.blockSize != 0 {
		return 0, fmt.Errorf("tensor %s: rows of %d %s values are no whole number of blocks of %d", t.Name, row, t.Type, info.blockSize)
	}
	return n / int64(info.blockSize) * int64(info.typeSize), nil
}

// countWriter counts what passes through it to w.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Scalar values for KV.
func U32(v uint32) Value    { return Value{Type: TypeUint32, V: uint64(v)} }
func Int32(v int32) Value   { return Value{Type: TypeInt32, V: int64(v)} }
func U64(v uint64) Value    { return Value{Type: TypeUint64, V: v} }
func Float(v float32) Value { return Value{Type: TypeFloat32, V: float64(v)} }
func Str(s string) Value    { return Value{Type: TypeString, V: s} }
func Bool(b bool) Value     { return Value{Type: TypeBool, V: b} }
func Arr(elem ValueType, vs ...Value) Value {
	return Value{Type: TypeArray, Elem: elem, Array: vs}
}

// Write writes a GGUF version-3 file with the given metadata and tensors (data
// aligned to alignment, 0 meaning DefaultAlignment; a general.alignment pair is
// written when it is not the default). The first error — a bad tensor, a Stream's,
// or w's — stops it and is returned.
func Write(w io.Writer, kvs []KV, ts []WriteTensor, alignment int) error {
	if alignment == 0 {
		alignment = DefaultAlignment
	}
	if alignment < 1 || alignment&(alignment-1) != 0 {
		return fmt.Errorf("gguf write: alignment %d is not a power of two", alignment)
	}
	if alignment != DefaultAlignment {
		kvs = append([]KV{{"general.alignment", U32(uint32(alignment))}}, kvs...)
	}
	bw := bufio.NewWriter(w)
	var pos int64
	put := func(b []byte) {
		bw.Write(b)
		pos += int64(len(b))
	}
	u32 := func(v uint32) { put(binary.LittleEndian.AppendUint32(nil, v)) }
	u64 := func(v uint64) { put(binary.LittleEndian.AppendUint64(nil, v)) }
	str := func(s string) { u64(uint64(len(s))); put([]byte(s)) }
	var value func(v Value) error
	value = func(v Value) error {
		switch v.Type {
		case TypeString:
			s, ok := v.Str()
			if !ok {
				return fmt.Errorf("string value holds %T", v.V)
			}
			str(s)
		case TypeArray:
			u32(uint32(v.Elem))
			u64(uint64(len(v.Array)))
			for _, e := range v.Array {
				if e.Type != v.Elem {
					return fmt.Errorf("array of %s holds a %s", v.Elem, e.Type)
				}
				if err := value(e); err != nil {
					return err
				}
			}
		case TypeBool:
			b, ok := v.Bool()
			if !ok {
				return fmt.Errorf("bool value holds %T", v.V)
			}
			if b {
				put([]byte{1})
			} else {
				put([]byte{0})
			}
		case TypeFloat32, TypeFloat64:
			f, ok := v.Float()
			if !ok {
				return fmt.Errorf("%s value holds %T", v.Type, v.V)
			}
			if v.Type == TypeFloat32 {
				u32(math.Float32bits(float32(f)))
			} else {
				u64(math.Float64bits(f))
			}
		default:
			size := v.Type.fixedSize()
			if size == 0 {
				return fmt.Errorf("unknown value type %d", uint32(v.Type))
			}
			var bits uint64
			switch x := v.V.(type) {
			case uint64:
				bits = x
			case int64:
				bits = uint64(x)
			default:
				return fmt.Errorf("%s value holds %T", v.Type, v.V)
			}
			put(binary.LittleEndian.AppendUint64(nil, bits)[:size])
		}
		return nil
	}

	put([]byte(Magic))
	u32(3)
	u64(uint64(len(ts)))
	u64(uint64(len(kvs)))
	for _, kv := range kvs {
		str(kv.Key)
		u32(uint32(kv.Value.Type))
		if err := value(kv.Value); err != nil {
			return fmt.Errorf("gguf write: metadata %q: %w", kv.Key, err)
		}
	}
	var off uint64
	offsets := make([]uint64, len(ts))
	sizes := make([]int64, len(ts))
	for i, t := range ts {
		size, err := t.Size()
		if err != nil {
			return fmt.Errorf("gguf write: %w", err)
		}
		if (t.Data != nil || t.Stream == nil) && int64(len(t.Data)) != size {
			return fmt.Errorf("gguf write: tensor %s: %d bytes for %v %s (%d bytes)", t.Name, len(t.Data), t.Shape, t.Type, size)
		}
		sizes[i] = size
		str(t.Name)
		u32(uint32(len(t.Shape)))
		for j := len(t.Shape) - 1; j >= 0; j-- { // innermost first
			u64(uint64(t.Shape[j]))
		}
		u32(uint32(t.Type))
		offsets[i] = off
		u64(off)
		off = alignUp(off+uint64(size), uint64(alignment))
	}
	pad := func() { put(make([]byte, alignUp(uint64(pos), uint64(alignment))-uint64(pos))) }
	pad()
	for i, t := range ts {
		if t.Data != nil || t.Stream == nil {
			put(t.Data)
		} else {
			cw := &countWriter{w: bw}
			if err := t.Stream(cw); err != nil {
				return fmt.Errorf("gguf write: tensor %s: %w", t.Name, err)
			}
			if cw.n != sizes[i] {
				return fmt.Errorf("gguf write: tensor %s: wrote %d bytes of %d", t.Name, cw.n, sizes[i])
			}
			pos += cw.n
		}
		pad()
		if _, err := bw.Write(nil); err != nil { // bufio keeps the first error of w
			return fmt.Errorf("gguf write: %w", err)
		}
	}
	return bw.Flush()
}
