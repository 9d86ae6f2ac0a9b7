package train

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/model/arch"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// Growing a trained model deeper (progressive stacking, Gong et al. 2019, "Efficient
// Training of BERT by Progressively Stacking"): the grown stack of n layers repeats the
// source's stack, layer j starting from source layer j mod L with its layer type, so a
// Mini of 5 sliding layers and 1 full grows to 12 in Gemma's own 5:1 pattern. The
// first L layers are the source's; each later one is a copy whose residual branches
// are switched off — its post_attention_layernorm and post_feedforward_layernorm
// weights zero, its layer scalars (decoder's and encoder's) one — so it passes its
// input through unchanged and the grown model computes what the source did, token
// for token. Training then fades the copies in: the gradient of a zero norm weight is
// the branch's normalized output, which is well scaled. (Zeroing o_proj and the down
// projections instead would not work with sandwich norms: the post-norm of a
// near-zero branch amplifies it by 1/√eps, so the first step would switch the branch
// fully on.)

// GrowLayers is the source layer each layer of a grown stack of n layers starts
// from (j mod layers), and whether it is a switched-off copy (j ≥ layers).
func GrowLayers(layers, n int) (from []int, copied []bool) {
	for j := range n {
		from = append(from, j%layers)
		copied = append(copied, j >= layers)
	}
	return from, copied
}

// GrowConfig is src deepened to n layers (GrowLayers): layer types repeat, every
// other setting stays.
func GrowConfig(src *config.Model, n int) (*config.Model, error) {
	l := src.Text.NumHiddenLayers
	if n <= l {
		return nil, fmt.Errorf("grow: the model has %d layers; give more than that, not %d", l, n)
	}
	if len(src.Text.LayerTypes) != l {
		return nil, fmt.Errorf("grow: the config lists %d layer types for %d layers", len(src.Text.LayerTypes), l)
	}
	c := *src
	t := src.Text
	from, _ := GrowLayers(l, n)
	t.LayerTypes = nil
	for _, f := range from {
		t.LayerTypes = append(t.LayerTypes, src.Text.LayerTypes[f])
	}
	t.NumHiddenLayers = n
	c.Text = t
	return &c, nil
}

// growZeroed are the weights of a copied layer that are zero: the post-norms of
// its two residual branches.
var growZeroed = []string{"post_attention_layernorm.weight", "post_feedforward_layernorm.weight"}

// GrowSet returns the weights of the grown model (cfg, from GrowConfig) from the
// source's set src of a model with layers layers. The tensors of the first layers
// are src's own (shared, not copied); a copied layer's are fresh.
func GrowSet(src *weights.Set, layers int, cfg *config.Model) (*weights.Set, error) {
	if len(src.Quant) > 0 {
		return nil, fmt.Errorf("grow: the model is quantized; grow its bf16 or float32 weights")
	}
	from, copied := GrowLayers(layers, cfg.Text.NumHiddenLayers)
	out := weights.NewSet()
	for _, s := range weights.Specs(cfg) {
		name, j := s.Name, layerOf(s.Name)
		if j < 0 {
			t, ok := src.Tensors[name]
			if !ok {
				return nil, fmt.Errorf("grow: the model has no %s", name)
			}
			out.Tensors[name] = t
			continue
		}
		at := strings.Index(name, arch.LayerPrefix(j))
		rest := name[at+len(arch.LayerPrefix(j)):]
		srcName := name[:at] + arch.LayerPrefix(from[j]) + rest
		t, ok := src.Tensors[srcName]
		if !ok {
			return nil, fmt.Errorf("grow: the model has no %s (for %s)", srcName, name)
		}
		if !copied[j] {
			out.Tensors[name] = t
			continue
		}
		f, err := src.Float32(srcName)
		if err != nil {
			return nil, fmt.Errorf("grow: %w", err)
		}
		data, err := tensors.CopyFlatData[float32](f)
		if err != nil {
			return nil, fmt.Errorf("grow: %s: %w", srcName, err)
		}
		switch {
		case slices.Contains(growZeroed, rest):
			clear(data)
		case rest == "layer_scalar":
			for i := range data {
				data[i] = 1
			}
		}
		out.Tensors[name] = tensors.FromFlatDataAndDimensions(data, t.Shape().Dimensions...)
	}
	return out, nil
}

// layerOf is the layer index of a canonical per-layer name ("layers.3.…",
// "encoder.layers.3.layer_scalar"), or −1.
func layerOf(name string) int {
	i := strings.Index(name, "layers.")
	if i < 0 || name[:i] != "" && name[:i] != "encoder." {
		return -1
	}
	var j int
	if _, err := fmt.Sscanf(name[i:], "layers.%d.", &j); err != nil {
		return -1
	}
	return j
}

// Grow writes to dst the model in src deepened to n layers (see GrowLayers): its
// config, weights in src's dtype, and every other file of src's folder (tokenizer,
// generation_config.json, card…) as it is. dst must not exist or be empty.
func Grow(src, dst string, n int) (*config.Model, error) {
	cfg, err := config.Load(src)
	if err != nil {
		return nil, fmt.Errorf("grow %s: %w", src, err)
	}
	grown, err := GrowConfig(cfg, n)
	if err != nil {
		return nil, fmt.Errorf("grow %s: %w", src, err)
	}
	if err := checkEmptyOrMissing(dst); err != nil { // before the weights are read
		return nil, fmt.Errorf("grow: %w", err)
	}
	set, err := weights.Load(src, cfg)
	if err != nil {
		return nil, fmt.Errorf("grow %s: %w", src, err)
	}
	out, err := GrowSet(set, cfg.Text.NumHiddenLayers, grown)
	if err != nil {
		return nil, fmt.Errorf("grow %s: %w", src, err)
	}
	dtype := map[string]string{"bfloat16": "bf16", "float32": "f32"}[cfg.DType]
	if err := weights.Save(out, grown, dst, weights.SaveOptions{DType: dtype}); err != nil {
		return nil, fmt.Errorf("grow: %w", err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return nil, fmt.Errorf("grow %s: %w", src, err)
	}
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || n == "config.json" || strings.HasPrefix(n, "model.safetensors") || strings.HasPrefix(n, "model-") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			return nil, fmt.Errorf("grow %s: %w", src, err)
		}
		if err := os.WriteFile(filepath.Join(dst, n), b, 0o644); err != nil {
			return nil, fmt.Errorf("grow: %w", err)
		}
	}
	return grown, nil
}
