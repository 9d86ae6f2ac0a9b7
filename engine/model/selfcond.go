package model

import (
	"github.com/darkroomlabs/darkroom/engine/model/arch"
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// SelfCondition is the decoder's input block (arch.DecoderInput), the only
// decoder-only weights:
//
//	inputs = RMSNorm_noscale(embed(canvas)·√D + down(gelu_tanh(gate(n))·up(n))),  n = pre_norm(soft)
//
// soft is the previous step's soft embedding (SoftEmbedding). soft == nil means the
// first step of a canvas, where soft is zero and the MLP term is exactly zero, so it is
// skipped: inputs = RMSNorm_noscale(embed(canvas)·√D).
//
// canvas: [B, C] Int32, soft: [B, C, D] or nil → [B, C, D]
func (p *Params) SelfCondition(canvas, soft *Node) *Node {
	return arch.DecoderInput(&graphOps{p: p}, p.Cfg, p.Embed(canvas), soft, soft != nil)
}

// SoftEmbedding is the self-conditioning signal handed from one denoising step to the
// next: softmax(logits / T) @ embed_tokens · √D (√D rounded as in Embed), computed in
// float32 from the step's soft-capped logits and temperature T > 0. It is hidden-sized
// ([B, C, D]) instead of vocabulary-sized. The embedding is converted to float32 in
// vocabulary chunks of HeadChunkRows rows, the probabilities computed per chunk and
// the products summed (softProduct, chunk.go).
//
// logits: [B, C, V], temperature: scalar (any float dtype) → [B, C, D]
func (p *Params) SoftEmbedding(logits, temperature *Node) *Node {
	return p.softEmbeddingChunked(logits, temperature, HeadChunkRows(p.Cfg.VocabSize, p.Cfg.HiddenSize))
}

// softEmbeddingChunked is SoftEmbedding over vocabulary chunks of rows rows.
func (p *Params) softEmbeddingChunked(logits, temperature *Node, rows int) *Node {
	logits = toF32(logits)
	soft := softProduct(p, Div(logits, ConvertDType(temperature, logits.DType())), rows) // [B, C, D]
	return MulScalar(soft, p.EmbedScale())
}
