package weights

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/gguf"
)

// released26B is the text config of google/diffusiongemma-26B-A4B-it.
func released26B(t *testing.T) *config.Model {
	t.Helper()
	cfg := config.Tiny()
	tx := &cfg.Text
	tx.VocabSize, tx.HiddenSize, tx.IntermediateSize, tx.MoEIntermediateSize = 262144, 2816, 2112, 704
	tx.NumExperts, tx.TopKExperts, tx.NumHiddenLayers = 128, 8, 30
	tx.NumAttentionHeads, tx.NumKeyValueHeads, tx.NumGlobalKVHeads, tx.HeadDim, tx.GlobalHeadDim = 16, 8, 2, 256, 512
	tx.LayerTypes = nil
	for i := 0; i < 30; i++ {
		lt := config.SlidingAttention
		if i%6 == 5 {
			lt = config.FullAttention
		}
		tx.LayerTypes = append(tx.LayerTypes, lt)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestGGUFNames: for the 26B-A4B config the table's GGUF names are the inventory of
// Unsloth's Q4_K_M file — 692 tensors with rope_freqs, written out here a second time
// for layer 0, no attn_v on the full layers — and ClassifyGGUF reads each back.
func TestGGUFNames(t *testing.T) {
	cfg := released26B(t)
	names := map[string]bool{gguf.RopeFreqs: true}
	for _, sp := range Specs(cfg) {
		if names[sp.GGUF] {
			t.Errorf("GGUF name %s used twice", sp.GGUF)
		}
		names[sp.GGUF] = true
		if c, ignored, ok := ClassifyGGUF(sp.GGUF); c != sp.Name || ignored || !ok {
			t.Errorf("ClassifyGGUF(%s) = %q, %v, %v; want %s", sp.GGUF, c, ignored, ok, sp.Name)
		}
		for _, part := range sp.GGUFSplit {
			if c, _, ok := ClassifyGGUF(part); c != sp.Name || !ok {
				t.Errorf("ClassifyGGUF(%s) = %q, %v; want %s", part, c, ok, sp.Name)
			}
		}
	}
	if len(names) != 692 {
		t.Errorf("%d GGUF tensors, want 692", len(names))
	}
	var blk0 []string
	for n := range names {
		if rest, ok := strings.CutPrefix(n, "blk.0."); ok {
			blk0 = append(blk0, rest)
		}
	}
	slices.Sort(blk0)
	want := []string{"attn_k.weight", "attn_k_norm.weight", "attn_norm.weight", "attn_output.weight", "attn_q.weight",
		"attn_q_norm.weight", "attn_v.weight", "enc_layer_output_scale.weight", "ffn_down.weight", "ffn_down_exps.scale",
		"ffn_down_exps.weight", "ffn_gate.weight", "ffn_gate_inp.scale", "ffn_gate_inp.weight", "ffn_gate_up_exps.weight",
		"ffn_norm.weight", "ffn_up.weight", "layer_output_scale.weight", "post_attention_norm.weight", "post_ffw_norm.weight",
		"post_ffw_norm_1.weight", "post_ffw_norm_2.weight", "pre_ffw_norm_2.weight"}
	if !slices.Equal(blk0, want) {
		t.Errorf("blk.0 holds %v, want %v", blk0, want)
	}
	for i := 0; i < 30; i++ {
		if v := fmt.Sprintf("blk.%d.attn_v.weight", i); names[v] != (i%6 != 5) {
			t.Errorf("%s listed %v", v, names[v])
		}
	}
	for _, g := range []string{"token_embd.weight", "output_norm.weight", "self_cond_pre_norm.weight", "self_cond_gate.weight",
		"self_cond_up.weight", "self_cond_down.weight"} {
		if !names[g] {
			t.Errorf("%s missing", g)
		}
	}
	for _, c := range []struct {
		name             string
		canonical        string
		ignored, unknown bool
	}{
		{"blk.7.ffn_gate_exps.weight", "layers.7.experts.gate_up_proj", false, false},
		{"blk.7.ffn_up_exps.weight", "layers.7.experts.gate_up_proj", false, false},
		{"blk.99.attn_q.weight", "layers.99.self_attn.q_proj.weight", false, false}, // any index: the config decides
		{"blk.3.enc_layer_output_scale.weight", "encoder.layers.3.layer_scalar", false, false},
		{"rope_freqs.weight", "", true, false},
		{"blk.5.rope_freqs.weight", "", true, false},
		{"output.weight", "", false, true},
		{"blk.x.attn_q.weight", "", false, true},
		{"blk.0.attn_qq.weight", "", false, true},
		{"attn_q.weight", "", false, true},
	} {
		got, ignored, ok := ClassifyGGUF(c.name)
		if got != c.canonical || ignored != c.ignored || ok == c.unknown {
			t.Errorf("ClassifyGGUF(%s) = %q, %v, %v; want %q, %v, %v", c.name, got, ignored, ok, c.canonical, c.ignored, !c.unknown)
		}
	}
}
