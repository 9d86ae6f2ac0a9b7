package weights

import (
	"cmp"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
	"github.com/darkroomlabs/darkroom/engine/quant"
)

// GGUFLayout is how a GGUF file stores a model's tensors, for the estimates that
// price it (models/fit, models/speed): each tensor's block type and bytes as stored,
// and the bytes the graph path holds it in (DeviceBytes). It is either a mix's
// rule (MixLayout: a download priced before it is read, by GGUFType) or a file's own
// types (GGUFLayoutOf, ReadGGUFLayout, Mapped.GGUFLayout: what its header says,
// whatever rule made it — a community file of Q3_K or IQ4_XS, Unsloth's dynamic
// quants, a pure Q4_0 file no mix comes near, each priced as it is). The zero
// GGUFLayout is no GGUF file.
type GGUFLayout struct {
	// Mix is the file's mix, or the one that gives the most of its tensors their
	// types (GGUFMixOf): it names the file where it is one ("Q4_K_M") and is "" for a
	// file no mix comes near.
	Mix gguf.Mix
	// tensors are a file's plans by Spec.Name: nil for a mix's rule.
	tensors map[string]ggufPlan
}

// MixLayout is the layout of a GGUF file of mix m, as llama.cpp's quantizer writes
// it (GGUFType); the zero layout for m "".
func MixLayout(m gguf.Mix) GGUFLayout { return GGUFLayout{Mix: m} }

// GGUFLayoutOf is the layout of GGUF file f, holding cfg: its tensors' own types,
// planned and checked as the loader plans them (names, shapes, config).
func GGUFLayoutOf(f *gguf.File, cfg *config.Model) (GGUFLayout, error) {
	plans, err := planGGUF(f, cfg, GGUFOptions{})
	if err != nil {
		return GGUFLayout{}, err
	}
	l := GGUFLayout{tensors: make(map[string]ggufPlan, len(plans))}
	for _, p := range plans {
		l.tensors[p.spec.Name] = p
	}
	l.Mix, _ = GGUFMixOf(f, cfg)
	return l, nil
}

// GGUFLayout is the layout of the GGUF file m maps, from the header it has read;
// the zero layout for a safetensors checkpoint.
func (m *Mapped) GGUFLayout() GGUFLayout {
	if m.gf == nil {
		return GGUFLayout{}
	}
	l := GGUFLayout{tensors: m.plans}
	l.Mix, _ = GGUFMixOf(m.gf, m.cfg)
	return l
}

// ReadGGUFLayout is GGUFLayoutOf for the GGUF file name in files, its header only
// read.
func ReadGGUFLayout(files fs.FS, name string, cfg *config.Model) (GGUFLayout, error) {
	f, err := files.Open(name)
	if err != nil {
		return GGUFLayout{}, err
	}
	defer f.Close()
	r, ok := f.(io.ReaderAt)
	if !ok {
		return GGUFLayout{}, fmt.Errorf("%s: cannot be read at an offset", name)
	}
	st, err := f.Stat()
	if err != nil {
		return GGUFLayout{}, err
	}
	g, err := gguf.Parse(r, st.Size(), name)
	if err != nil {
		return GGUFLayout{}, err
	}
	return GGUFLayoutOf(g, cfg)
}

// IsGGUF reports whether l is a GGUF file's layout (not the zero one).
func (l GGUFLayout) IsGGUF() bool { return l.Mix != "" || l.tensors != nil }

// Quantized reports whether any of l's tensors is in a block type: false for a file
// of float tensors (F32, F16, BF16), which is priced as the float checkpoint it holds.
func (l GGUFLayout) Quantized() bool {
	if l.tensors == nil {
		return l.Mix != ""
	}
	for _, p := range l.tensors {
		for _, t := range p.parts {
			if !t.Type.IsFloat() {
				return true
			}
		}
	}
	return false
}

// plan is how l stores tensor s: the file's plan, or for a mix the plan its rule
// gives (GGUFType's block type; llama.cpp leaves the rest F32: vectors, the router);
// false for the zero layout or a tensor the file lacks.
func (l GGUFLayout) plan(cfg *config.Model, s Spec) (ggufPlan, bool) {
	if l.tensors != nil {
		p, ok := l.tensors[s.Name]
		return p, ok
	}
	if l.Mix == "" {
		return ggufPlan{}, false
	}
	t, ok := GGUFType(cfg, l.Mix, s)
	if !ok {
		t = gguf.F32
	}
	n := uint64(s.Elements()) / uint64(t.BlockSize()) * uint64(t.BlockBytes())
	p := ggufPlan{spec: s, parts: []gguf.TensorInfo{{Name: s.GGUF, Type: t, Size: n}}}
	if err := decideGGUF(&p, GGUFOptions{}); err != nil {
		return ggufPlan{}, false // no mix's rule gives a shape the conversion refuses
	}
	return p, true
}

// Type is the block type l stores tensor s in (a split tensor's first part's: the
// gate experts'), and false for the zero layout.
func (l GGUFLayout) Type(cfg *config.Model, s Spec) (gguf.Type, bool) {
	p, ok := l.plan(cfg, s)
	if !ok {
		return 0, false
	}
	return p.parts[0].Type, true
}

// StoredBytes is tensor s's bytes in the file (its parts' together).
func (l GGUFLayout) StoredBytes(cfg *config.Model, s Spec) (int64, bool) {
	p, ok := l.plan(cfg, s)
	if !ok {
		return 0, false
	}
	var n int64
	for _, t := range p.parts {
		n += int64(t.Size)
	}
	return n, true
}

// DeviceBytes is tensor s's bytes as the graph path holds it (decideGGUF under
// DeviceGGUF: a matrix's blocks kept as stored, whatever their type; bf16 or f32
// values), as Set.Bytes counts them. A file the mapping declines (HostConverted) is
// loaded converted throughout (LoadGGUF's defaults: int8, int4 or affine int4 codes
// and scales), on a GPU too, and counted so.
func (l GGUFLayout) DeviceBytes(cfg *config.Model, s Spec) (int64, bool) {
	p, ok := l.plan(cfg, s)
	if ok && !l.HostConverted() {
		p.quant, p.bf16 = nil, false
		if err := decideGGUF(&p, DeviceGGUF); err != nil {
			return 0, false // planned under the defaults: no error left
		}
	}
	return p.bytes(ok)
}

// ConvertedBytes is tensor s's bytes as LoadGGUF converts it by default (int8, int4
// or affine int4 codes and scales; bf16 or f32 values): as the host path holds a file
// it cannot multiply as stored (HostConverted).
func (l GGUFLayout) ConvertedBytes(cfg *config.Model, s Spec) (int64, bool) {
	p, ok := l.plan(cfg, s)
	return p.bytes(ok)
}

// bytes is the memory p's tensor takes as planned, and ok as given.
func (p ggufPlan) bytes(ok bool) (int64, bool) {
	s := p.spec
	switch {
	case !ok:
		return 0, false
	case p.quant != nil:
		return p.quant.Bytes(s.Shape), true
	case p.bf16:
		return 2 * s.Elements(), true
	}
	return 4 * s.Elements(), true
}

// Converted is the quantized format LoadGGUF converts tensor s to by default
// (decideGGUF: how the host path holds a HostConverted file), and false where it
// holds s in float values.
func (l GGUFLayout) Converted(cfg *config.Model, s Spec) (quant.Spec, bool) {
	p, ok := l.plan(cfg, s)
	if !ok || p.quant == nil {
		return quant.Spec{}, false
	}
	return *p.quant, true
}

// HostHeld is the Darkroom format the host path holds tensor s in where it holds it
// converted (the package's HostHeld: a Q6_K embedding), and false where it
// multiplies it as stored.
func (l GGUFLayout) HostHeld(cfg *config.Model, s Spec) (int64, bool) {
	p, ok := l.plan(cfg, s)
	if !ok || !p.hostConverted() {
		return 0, false
	}
	return p.quant.Bytes(s.Shape), true
}

// HostConverted reports whether the host path cannot multiply l's blocks as stored
// and loads the file converted, as the graph path holds it (Map declines it: split
// gate and up experts of two types).
func (l GGUFLayout) HostConverted() bool {
	for _, p := range l.tensors {
		if len(p.parts) == 2 && p.parts[0].Type != p.parts[1].Type {
			return true
		}
	}
	return false
}

// Types lists the block types of l's matrices for cfg, fewest bytes a weight first
// (the quantized ones; F32 where a file keeps a matrix float).
func (l GGUFLayout) Types(cfg *config.Model) []gguf.Type {
	var out []gguf.Type
	for _, s := range Specs(cfg) {
		p, ok := l.plan(cfg, s)
		if !ok || len(s.Shape) < 2 || !s.Quantizable {
			continue
		}
		for _, t := range p.parts {
			if !slices.Contains(out, t.Type) {
				out = append(out, t.Type)
			}
		}
	}
	perWeight := func(t gguf.Type) float64 { return float64(t.BlockBytes()) / float64(t.BlockSize()) }
	slices.SortFunc(out, func(a, b gguf.Type) int {
		return cmp.Or(cmp.Compare(perWeight(a), perWeight(b)), strings.Compare(a.String(), b.String()))
	})
	return out
}

// IsMix reports whether every tensor of l has the type its mix's rule gives it
// (true for a mix's own layout; a file llama.cpp wrote in that mix).
func (l GGUFLayout) IsMix(cfg *config.Model) bool {
	if l.Mix == "" {
		return false
	}
	m := MixLayout(l.Mix)
	for _, s := range Specs(cfg) {
		a, okA := l.plan(cfg, s)
		b, okB := m.plan(cfg, s)
		if !okA || !okB || len(s.Shape) < 2 {
			continue
		}
		for _, t := range a.parts {
			if t.Type != b.parts[0].Type && !(t.Type.IsFloat() && b.parts[0].Type.IsFloat()) {
				return false
			}
		}
	}
	return true
}

// Describe names l's blocks in a few words: the mix ("Q4_K_M") where its tensors
// are that mix's, else their types ("Q3_K, Q4_K, Q6_K").
func (l GGUFLayout) Describe(cfg *config.Model) string {
	if l.IsMix(cfg) {
		return string(l.Mix)
	}
	var names []string
	for _, t := range l.Types(cfg) {
		names = append(names, t.String())
	}
	return strings.Join(names, ", ")
}
