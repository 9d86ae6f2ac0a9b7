package model

import "github.com/darkroomlabs/darkroom/engine/config"

// FLOPs is the model arithmetic (2 per multiply-add) of one decoder step over a canvas
// of `tokens` positions after `prefix` cached tokens: self-conditioning MLP, every
// layer's projections, attention over the keys each query may see (the whole canvas,
// plus on sliding layers the last sliding_window−1 cached tokens and on full layers the
// whole prefix), dense MLP, router, the k routed experts, the LM head, and the next
// step's soft embedding. It counts useful work: the padding the static shapes add
// (masked cache slots, MoE block padding) is not included, so FLOPs/time is the
// engine's effective rate.
func FLOPs(cfg *config.Text, tokens, prefix int) float64 {
	d, v := float64(cfg.HiddenSize), float64(cfg.VocabSize)
	n := float64(tokens)
	total := n * 3 * 2 * d * float64(cfg.IntermediateSize) // self-conditioning MLP
	for i := range cfg.NumHiddenLayers {
		keys := tokens + prefix
		if cfg.IsSliding(i) && cfg.SlidingWindow > 0 {
			keys = tokens + min(prefix, cfg.SlidingWindow-1)
		}
		total += n*layerFLOPs(cfg, i) + n*attnFLOPs(cfg, i, float64(keys))
	}
	total += n * 2 * d * v // LM head
	total += n * 2 * d * v // soft embedding for the next step
	return total
}

// EncodeFLOPs is the arithmetic of one causal encoder pass over `tokens` new tokens
// after `prefix` cached ones (token j sees prefix+j+1 keys, at most sliding_window on
// sliding layers), with logits for the last token only (as Runner.Encode does).
func EncodeFLOPs(cfg *config.Text, tokens, prefix int) float64 {
	total := 0.0
	for i := range cfg.NumHiddenLayers {
		total += float64(tokens) * layerFLOPs(cfg, i)
		for j := range tokens {
			keys := prefix + j + 1
			if cfg.IsSliding(i) && cfg.SlidingWindow > 0 {
				keys = min(keys, cfg.SlidingWindow)
			}
			total += attnFLOPs(cfg, i, float64(keys))
		}
	}
	return total + 2*float64(cfg.HiddenSize)*float64(cfg.VocabSize)
}

// ScoreFLOPs is EncodeFLOPs with logits for tokens from… (as Runner.Score does).
func ScoreFLOPs(cfg *config.Text, tokens, from, prefix int) float64 {
	return EncodeFLOPs(cfg, tokens, prefix) + float64(tokens-from-1)*2*float64(cfg.HiddenSize)*float64(cfg.VocabSize)
}

// layerFLOPs is one token's arithmetic in layer i outside the attention scores:
// q/k/(v)/o projections, dense MLP, router, k experts.
func layerFLOPs(cfg *config.Text, i int) float64 {
	d := float64(cfg.HiddenSize)
	h, kv, hd := float64(cfg.NumAttentionHeads), float64(cfg.KVHeads(i)), float64(cfg.LayerHeadDim(i))
	proj := 2 * d * (h*hd + kv*hd + h*hd) // q, k, o
	if cfg.IsSliding(i) {
		proj += 2 * d * kv * hd // v
	}
	dense := 3 * 2 * d * float64(cfg.IntermediateSize)
	router := 2 * d * float64(cfg.NumExperts)
	experts := float64(cfg.TopKExperts) * 3 * 2 * d * float64(cfg.MoEIntermediateSize)
	return proj + dense + router + experts
}

// attnFLOPs is one query's scores and weighted values over `keys` keys in layer i.
func attnFLOPs(cfg *config.Text, i int, keys float64) float64 {
	return 2 * 2 * float64(cfg.NumAttentionHeads) * float64(cfg.LayerHeadDim(i)) * keys
}
