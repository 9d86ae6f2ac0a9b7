package weights

import (
	"fmt"
	"strings"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
	"github.com/darkroomlabs/darkroom/engine/safetensors"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Mapped is a checkpoint's tensors in their stored format for the host model, which
// multiplies them as stored (engine/model's HostSource): a safetensors checkpoint's
// left where they are, in the files' memory mappings (the bytes are read from disk as
// they are first used, and the page cache holds them, not the heap); a GGUF file's
// likewise as its blocks, each looked up when first used (readGGUF: its split experts
// and its Q6_K read onto the heap). Graphs need GoMLX tensors instead: Set reads them.
type Mapped struct {
	ck      *safetensors.Checkpoint // nil for a GGUF file
	cfg     *config.Model
	tensors map[string]Stored
	bytes   int64

	// A GGUF file: open, its tensors read on first Lookup (readGGUF).
	gf    *gguf.File
	plans map[string]ggufPlan

	// held are tensors the host holds in another format than stored, converted on
	// their first Lookup (holdAs: a ModelOpt export's embedding, HostEmbedding), so a
	// graph path that copies the stored form out (Set) converts nothing.
	held map[string]quant.Spec
}

// Map opens the checkpoint in dir for cfg without reading it. Every tensor is checked
// as Load checks it (the names, shapes and quantized pairs), and every matrix's byte
// counts against its format (kernels.Matrix.Check): a damaged tensor is an error
// naming the file and tensor, and nothing stays open. A directory holding a GGUF file
// is opened instead, each tensor read as stored when first looked up (its GGUF blocks
// kept: see readGGUF).
// A ModelOpt NVFP4 export is mapped too, its experts one part per module (Stored.Parts)
// and only its scales read, into Darkroom's NVFP4 scale rows (mapModelOpt).
// ok is false, with no error, for a checkpoint the host model cannot use as stored — F16
// tensors, GGUF experts of mixed types — which Load reads (and converts) instead. progress, if not
// nil, hears the bytes of a safetensors checkpoint's files read so far where they are
// read rather than mapped (safetensors.OpenCheckpointProgress: DARKROOM_NO_MMAP).
func Map(dir string, cfg *config.Model, progress func(done, total int64)) (m *Mapped, ok bool, err error) {
	if path, isGGUF, err := FindGGUF(dir); err != nil {
		return nil, false, fmt.Errorf("load weights from %s: %w", dir, err)
	} else if isGGUF {
		if m, ok, err = openGGUFStored(path, cfg); err != nil {
			return nil, false, fmt.Errorf("load weights from %s: %w", dir, err)
		}
		return m, ok, nil
	}
	ck, err := safetensors.OpenCheckpointProgress(dir, progress)
	if err != nil {
		return nil, false, fmt.Errorf("load weights from %s: %w", dir, err)
	}
	m, ok, err = mapCheckpoint(ck, cfg)
	if err != nil || !ok {
		ck.Close()
		if err != nil {
			return nil, false, fmt.Errorf("load weights from %s: %w", dir, err)
		}
		return nil, false, nil
	}
	return m, true, nil
}

func mapCheckpoint(ck *safetensors.Checkpoint, cfg *config.Model) (*Mapped, bool, error) {
	if IsModelOpt(ck) {
		return mapModelOpt(ck, cfg)
	}
	plans, err := planCheckpoint(ck, cfg)
	if err != nil {
		return nil, false, err
	}
	m := &Mapped{ck: ck, cfg: cfg, tensors: make(map[string]Stored, len(plans))}
	for _, p := range plans {
		s, ok, err := mapPlan(p)
		if err != nil || !ok {
			return nil, false, err
		}
		if err := m.add(s); err != nil {
			return nil, false, err
		}
	}
	return m, true, nil
}

// mapPlan is the planned tensor as stored, a view of its file; ok is false for an F16
// tensor, which only Load reads (widened).
func mapPlan(p plan) (s Stored, ok bool, err error) {
	s = Stored{Name: p.spec.Name, File: p.file.Name, Shape: p.spec.Shape}
	if p.quant {
		q := p.qspec
		s.Quant, s.DType = &q, q.DType()
		if s.Data, err = p.file.Raw(p.hf + quant.WeightSuffix); err == nil {
			s.Scales, err = p.qsfile.Raw(p.hf + quant.ScaleSuffix)
		}
		if err == nil && p.qmfile != nil {
			s.Mins, err = p.qmfile.Raw(p.hf + quant.MinSuffix)
		}
		return s, err == nil, err
	}
	switch p.info.DType {
	case safetensors.F32:
		s.DType = dtypes.Float32
	case safetensors.BF16:
		s.DType = dtypes.BFloat16
	default: // F16: widened as it is loaded
		return s, false, nil
	}
	s.Data, err = p.file.Raw(p.hf)
	return s, err == nil, err
}

// add checks s's bytes against its format and shape (a matrix's, each part's; a
// vector's values) and holds it.
func (m *Mapped) add(s Stored) error {
	var err error
	if len(s.Shape) >= 2 {
		_, err = s.PartMatrices()
	} else if s.Quant == nil {
		_, err = s.Float32()
	} else {
		err = fmt.Errorf("%s: tensor %s: a quantized vector", s.File, s.Name)
	}
	if err != nil {
		return err
	}
	m.tensors[s.Name] = s
	m.bytes += s.Bytes()
	return nil
}

// Lookup returns the canonical tensor name as stored (a view of the mapping, valid
// until Close; a GGUF tensor is read on its first Lookup). The bytes never change: the
// version is the Mapped itself. Like the Runner that reads it, a Mapped is not safe
// for concurrent use.
func (m *Mapped) Lookup(name string) (Stored, any, bool, error) {
	if m.tensors == nil {
		return Stored{}, nil, false, fmt.Errorf("weight %q: the checkpoint is closed", name)
	}
	s, ok := m.tensors[name]
	if p, planned := m.plans[name]; !ok && planned {
		var err error
		if s, err = m.readGGUF(p); err != nil {
			return Stored{}, nil, false, fmt.Errorf("weight %q: %w", name, err)
		}
		m.tensors[name], ok = s, true
	}
	if spec, held := m.held[name]; held && ok {
		var err error
		if s, err = holdAs(s, spec); err != nil {
			return Stored{}, nil, false, fmt.Errorf("weight %q: %w", name, err)
		}
		m.tensors[name] = s
		delete(m.held, name)
	}
	return s, m, ok, nil
}

// Bytes is the size of the mapped tensors.
func (m *Mapped) Bytes() int64 { return m.bytes }

// Set reads the tensors into a Set (copies, for the graph path: a GGUF file is
// converted as LoadGGUF converts it, but for the blocks the graph reads as stored:
// DeviceGGUF); the mapping stays open. progress, if not nil,
// hears the stored bytes of the tensors done so far of all of theirs, after each
// (the 26B's GGUF takes a minute to convert on a small PC).
func (m *Mapped) Set(progress func(done, total int64)) (*Set, error) {
	return m.SetOf(nil, progress)
}

// SetOf is Set of the tensors keep accepts (by their weight-table Spec; nil: all):
// what a model split between a device and the host puts on the device (the first
// layers' and the global tensors), the host reading the others from the mapping,
// which stays open. progress counts the accepted tensors' bytes only.
func (m *Mapped) SetOf(keep func(Spec) bool, progress func(done, total int64)) (*Set, error) {
	if m.tensors == nil {
		return nil, fmt.Errorf("load weights: the checkpoint is closed")
	}
	each := func(fn func(string, *tensors.Tensor, *quant.Spec) error) error {
		return eachFromCheckpoint(m.ck, m.cfg, keep, fn)
	}
	if m.gf != nil {
		if keep == nil {
			clear(m.tensors) // the tensors read as stored go first, so the two copies never coexist
		} else {
			for _, s := range Specs(m.cfg) {
				if keep(s) {
					delete(m.tensors, s.Name) // the device's: the host never reads them
				}
			}
		}
		opts := DeviceGGUF
		opts.Keep = keep
		each = func(fn func(string, *tensors.Tensor, *quant.Spec) error) error {
			return EachFromGGUFWith(m.gf, m.cfg, opts, fn)
		}
	}
	sizes := m.sourceSizes()
	if keep != nil {
		for _, s := range Specs(m.cfg) {
			if !keep(s) {
				delete(sizes, s.Name)
			}
		}
	}
	var total, done int64
	for _, n := range sizes {
		total += n
	}
	s, err := collect(func(fn func(string, *tensors.Tensor, *quant.Spec) error) error {
		return each(func(name string, t *tensors.Tensor, q *quant.Spec) error {
			if err := fn(name, t, q); err != nil {
				return err
			}
			// A tensor arrives whole, or as NAME.qweight (with its spec) then its scales
			// and minimums: counted once, as its plain or its qweight part arrives.
			if q != nil {
				name = strings.TrimSuffix(name, quant.WeightSuffix)
			}
			if n, ok := sizes[name]; ok && progress != nil {
				done += n
				progress(done, total)
			}
			return nil
		})
	})
	if err != nil && m.gf != nil {
		return nil, fmt.Errorf("load weights: %w", err)
	}
	return s, err
}

// sourceSizes is each canonical tensor's stored bytes in the file(s): a safetensors
// tensor's data (and its scales and minimums), a GGUF tensor's blocks (both parts of
// split gate and up experts).
func (m *Mapped) sourceSizes() map[string]int64 {
	sizes := map[string]int64{}
	if m.gf != nil {
		for name, p := range m.plans {
			for _, t := range p.parts {
				sizes[name] += int64(t.Size)
			}
		}
		return sizes
	}
	for name, s := range m.tensors {
		sizes[name] = s.Bytes()
	}
	return sizes
}

// Close unmaps the files (or drops a GGUF file's tensors); the Stored views become
// invalid.
func (m *Mapped) Close() error {
	m.tensors = nil
	if m.gf != nil {
		return m.gf.Close()
	}
	return m.ck.Close()
}
