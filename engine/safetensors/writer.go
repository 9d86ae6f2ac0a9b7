package safetensors

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/darkroomlabs/darkroom/engine/atomicfile"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Header is one tensor a Writer will write.
type Header struct {
	Name  string
	DType DType
	Shape []int
}

// Writer streams a safetensors file tensor by tensor: the header (all names, dtypes and
// shapes) is fixed up front, then each tensor's bytes are written in that order, whole
// (Write) or in parts (Next). The file appears at its final path only when Close
// succeeds.
type Writer struct {
	path    string
	tmp     *atomicfile.File // nil once closed or aborted
	w       *bufio.Writer
	headers []Header
	next    int
	// left is the number of bytes the tensor started last (headers[next-1]) still owes.
	left int64
	err  error
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
	// Model files are shared data, like a download: rw-r--r--.
	tmp, err := atomicfile.Create(path, 0o644)
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
	if err := w.start(name, int64(len(data))); err != nil {
		return err
	}
	return w.part(data)
}

// Next starts the next tensor and returns a writer for its bytes, which may arrive in
// any number of writes: a tensor larger than memory is streamed in pieces. They must add
// up to exactly the size its header says; the next Next, Write or Close checks it.
func (w *Writer) Next(name string) (io.Writer, error) {
	if err := w.start(name, -1); err != nil {
		return nil, err
	}
	return tensorWriter{w}, nil
}

// start checks the previous tensor is complete and name is the next one; size, when
// not -1, is the number of bytes the caller is about to write in one go.
func (w *Writer) start(name string, size int64) error {
	fname := filepath.Base(w.path)
	if w.err != nil {
		return fmt.Errorf("%s: %w", fname, w.err)
	}
	if err := w.finished(); err != nil {
		return err
	}
	if w.next >= len(w.headers) {
		return fmt.Errorf("%s: tensor %s: not in the header", fname, name)
	}
	h := w.headers[w.next]
	if h.Name != name {
		return fmt.Errorf("%s: tensor %s written out of order (expected %s)", fname, name, h.Name)
	}
	n := int64(h.DType.Size())
	for _, d := range h.Shape {
		n *= int64(d)
	}
	if size >= 0 && size != n {
		return fmt.Errorf("%s: tensor %s: %d bytes, shape %v of %s needs %d", fname, name, size, h.Shape, h.DType, n)
	}
	w.next++
	w.left = n
	return nil
}

// finished reports an error if the tensor started last still owes bytes.
func (w *Writer) finished() error {
	if w.left == 0 {
		return nil
	}
	h := w.headers[w.next-1]
	if w.err == nil {
		w.err = fmt.Errorf("tensor %s: %d bytes short of its shape %v of %s", h.Name, w.left, h.Shape, h.DType)
	}
	return fmt.Errorf("%s: %w", filepath.Base(w.path), w.err)
}

// part writes bytes of the tensor started last.
func (w *Writer) part(b []byte) error {
	fname := filepath.Base(w.path)
	if w.err != nil {
		return fmt.Errorf("%s: %w", fname, w.err)
	}
	if w.next == 0 {
		return fmt.Errorf("%s: %d bytes before the first tensor", fname, len(b))
	}
	h := w.headers[w.next-1]
	if int64(len(b)) > w.left {
		w.err = fmt.Errorf("tensor %s: %d bytes more than its shape %v of %s holds", h.Name, int64(len(b))-w.left, h.Shape, h.DType)
		return fmt.Errorf("%s: %w", fname, w.err)
	}
	w.write(b)
	w.left -= int64(len(b))
	if w.err != nil {
		return fmt.Errorf("%s: tensor %s: %w", fname, h.Name, w.err)
	}
	return nil
}

// tensorWriter is the io.Writer Next returns.
type tensorWriter struct{ w *Writer }

func (t tensorWriter) Write(b []byte) (int, error) {
	if err := t.w.part(b); err != nil {
		return 0, err
	}
	return len(b), nil
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

// Close checks every tensor was written and puts the file in place (atomicfile's
// Commit: synced, rw-r--r--, renamed over path).
func (w *Writer) Close() error {
	fname := filepath.Base(w.path)
	if w.tmp == nil {
		return fmt.Errorf("%s: writer already closed", fname)
	}
	if w.err == nil {
		w.finished()
	}
	if w.err == nil && w.next != len(w.headers) {
		w.err = fmt.Errorf("only %d of %d tensors written (next: %s)", w.next, len(w.headers), w.headers[w.next].Name)
	}
	if w.err == nil {
		w.err = w.w.Flush()
	}
	tmp := w.tmp
	w.tmp = nil
	if w.err != nil {
		tmp.Abort()
		return fmt.Errorf("%s: %w", fname, w.err)
	}
	w.err = tmp.Commit() // its error names the file
	return w.err
}

// Abort discards the partial file.
func (w *Writer) Abort() {
	if w.tmp != nil {
		w.tmp.Abort()
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
