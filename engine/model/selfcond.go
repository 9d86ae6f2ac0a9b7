package model

import (
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// SelfCondition is the decoder's input block, the only decoder-only weights:
//
//	inputs = RMSNorm_noscale(embed(canvas)·√D + down(gelu_tanh(gate(n))·up(n))),  n = pre_norm(soft)
//
// soft is the previous step's soft embedding (SoftEmbedding). soft == nil means the
// first step of a canvas, where soft is zero and the MLP term is exactly zero, so it is
// skipped: inputs = RMSNorm_noscale(embed(canvas)·√D).
//
// canvas: [B, C] Int32, soft: [B, C, D] or nil → [B, C, D]
func (p *Params) SelfCondition(canvas, soft *Node) *Node {
	x := p.Embed(canvas)
	if soft != nil {
		n := p.norm(soft, "self_conditioning.pre_norm.weight")
		x = Add(x, p.GatedMLP(n, "self_conditioning"))
	}
	return RMSNorm(x, nil, p.Cfg.RMSNormEps)
}

// SoftEmbedding is the self-conditioning signal handed from one denoising step to the
// next: softmax(logits / T) @ embed_tokens · √D (√D rounded as in Embed), computed in
// float32 from the step's soft-capped logits and temperature T > 0. It is hidden-sized
// ([B, C, D]) instead of vocabulary-sized.
//
// logits: [B, C, V], temperature: scalar (any float dtype) → [B, C, D]
func (p *Params) SoftEmbedding(logits, temperature *Node) *Node {
	logits = toF32(logits)
	probs := Softmax(Div(logits, ConvertDType(temperature, logits.DType())), -1)
	emb := p.Get("embed_tokens.weight") // [V, D]
	soft := DotGeneral(probs, []int{-1}, nil, emb, []int{0}, nil)
	return MulScalar(soft, p.EmbedScale())
}
