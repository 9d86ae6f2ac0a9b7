package safetensors

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Header is one tensor a Writer will write.
type Header struct {
	Name  string
	DType DType
	Shape []int
}

// Writer streams a safetensors file tensor by tensor: the header (all names, dtypes and
// shapes) is fixed up front, then each tensor's bytes are written in that order. The
// file appears at its final path only when Close succeeds.
type Writer struct {
	path    string
	tmp     *os.File
	w       *bufio.Writer
	headers []Header
	next    int
	err     error
}

// Create starts writing path with the given tensors (written in this order) and
// string metadata (may be nil).
func Create(path string, metadata map[string]string, headers []Header) (*Writer, error) {
	name := filepath.Base(path)
	hdr := map[string]any{}
	if len(metadata) > 0 {
		hdr["__metadata__"] = metadata
	}
	var off int64
	for _, h := range headers {
		if h.DType.Size() == 0 {
			return nil, fmt.Errorf("%s: tensor %s: unsupported dtype %q", name, h.Name, h.DType)
		}
		if _, dup := hdr[h.Name]; dup || h.Name == "__metadata__" {
			return nil, fmt.Errorf("%s: tensor %s: duplicate name", name, h.Name)
		}
		n := int64(h.DType.Size())
		for _, d := range h.Shape {
			if d < 0 {
				return nil, fmt.Errorf("%s: tensor %s: bad shape %v", name, h.Name, h.Shape)
			}
			n *= int64(d)
		}
		shape := h.Shape
		if shape == nil {
			shape = []int{}
		}
		hdr[h.Name] = map[string]any{"dtype": h.DType, "shape": shape, "data_offsets": []int64{off, off + n}}
		off += n
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for len(js)%8 != 0 { // align the data section to 8 bytes, as the reference writer does
		js = append(js, ' ')
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+name+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	w := &Writer{path: path, tmp: tmp, w: bufio.NewWriterSize(tmp, 1<<20), headers: headers}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(js)))
	w.write(lenBuf[:])
	w.write(js)
	if w.err != nil {
		w.Abort()
		return nil, fmt.Errorf("%s: %w", name, w.err)
	}
	return w, nil
}

func (w *Writer) write(b []byte) {
	if w.err == nil {
		_, w.err = w.w.Write(b)
	}
}

// Write writes the next tensor's bytes (little-endian, exactly as its header says).
func (w *Writer) Write(name string, data []byte) error {
	fname := filepath.Base(w.path)
	if w.err != nil {
		return fmt.Errorf("%s: %w", fname, w.err)
	}
	if w.next >= len(w.headers) {
		return fmt.Errorf("%s: tensor %s: not in the header", fname, name)
	}
	h := w.headers[w.next]
	if h.Name != name {
		return fmt.Errorf("%s: tensor %s written out of order (expected %s)", fname, name, h.Name)
	}
	n := h.DType.Size()
	for _, d := range h.Shape {
		n *= d
	}
	if len(data) != n {
		return fmt.Errorf("%s: tensor %s: %d bytes, shape %v of %s needs %d", fname, name, len(data), h.Shape, h.DType, n)
	}
	w.write(data)
	w.next++
	if w.err != nil {
		return fmt.Errorf("%s: tensor %s: %w", fname, name, w.err)
	}
	return nil
}

// WriteTensor writes the next tensor from a GoMLX tensor (its dtype must match the header).
func (w *Writer) WriteTensor(name string, t *tensors.Tensor) error {
	dt, _, b, err := Encode(t)
	if err != nil {
		return fmt.Errorf("%s: tensor %s: %w", filepath.Base(w.path), name, err)
	}
	if w.next < len(w.headers) && w.headers[w.next].DType != dt {
		return fmt.Errorf("%s: tensor %s: dtype %s, header says %s", filepath.Base(w.path), name, dt, w.headers[w.next].DType)
	}
	return w.Write(name, b)
}

// Close checks every tensor was written, syncs and renames the file into place.
func (w *Writer) Close() error {
	fname := filepath.Base(w.path)
	if w.tmp == nil {
		return fmt.Errorf("%s: writer already closed", fname)
	}
	if w.err == nil && w.next != len(w.headers) {
		w.err = fmt.Errorf("only %d of %d tensors written (next: %s)", w.next, len(w.headers), w.headers[w.next].Name)
	}
	if w.err == nil {
		w.err = w.w.Flush()
	}
	if w.err == nil { // model files are shared data, like a download: rw-r--r--, not CreateTemp's 0600
		w.err = w.tmp.Chmod(0o644)
	}
	if w.err == nil {
		w.err = w.tmp.Sync()
	}
	if err := w.tmp.Close(); w.err == nil {
		w.err = err
	}
	if w.err == nil {
		w.err = os.Rename(w.tmp.Name(), w.path)
	}
	if w.err != nil {
		os.Remove(w.tmp.Name())
		w.tmp = nil
		return fmt.Errorf("%s: %w", fname, w.err)
	}
	w.tmp = nil
	return nil
}

// Abort discards the partial file.
func (w *Writer) Abort() {
	if w.tmp != nil {
		w.tmp.Close()
		os.Remove(w.tmp.Name())
		w.tmp = nil
	}
}

// Named is a tensor with its name, for WriteFile.
type Named struct {
	Name   string
	Tensor *tensors.Tensor
}

// WriteFile writes all tensors to path atomically, in the given order.
func WriteFile(path string, metadata map[string]string, ts []Named) error {
	hs := make([]Header, len(ts))
	for i, nt := range ts {
		dt, err := FromGoMLX(nt.Tensor.DType())
		if err != nil {
			return fmt.Errorf("%s: tensor %s: %w", filepath.Base(path), nt.Name, err)
		}
		hs[i] = Header{Name: nt.Name, DType: dt, Shape: nt.Tensor.Shape().Dimensions}
	}
	w, err := Create(path, metadata, hs)
	if err != nil {
		return err
	}
	for _, nt := range ts {
		if err := w.WriteTensor(nt.Name, nt.Tensor); err != nil {
			w.Abort()
			return err
		}
	}
	return w.Close()
}
