package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/kernels"
)

// TestAttendBlocksMatchWholeRows: the host attention core, which multiplies each
// block of query rows against only the keys the block can see, gives bit for bit what
// the whole-row products gave (every query row against every key, the keys a row
// cannot see zeroed after the scores): causal and bidirectional, sliding windows,
// one or more KV heads and query heads per KV head, head widths above the products'
// depth block, prefixes that cross it, and chunks of fewer rows than MulNT packs.
func TestAttendBlocksMatchWholeRows(t *testing.T) {
	type layout struct{ heads, kvHeads, headDim int }
	layouts := []layout{{2, 1, 32}, {6, 2, 32}, {4, 4, 16}, {8, 1, 64}, {2, 1, 512}}
	rng := rand.New(rand.NewPCG(7, 7))
	for _, l := range layouts {
		cfg := &config.Text{NumAttentionHeads: l.heads, NumKeyValueHeads: l.kvHeads, HeadDim: l.headDim,
			NumGlobalKVHeads: l.kvHeads, GlobalHeadDim: l.headDim, SlidingWindow: 128,
			LayerTypes: []config.LayerType{config.SlidingAttention, config.FullAttention}}
		for layer := range 2 {
			for _, causal := range []bool{true, false} {
				for _, c := range []int{1, 2, 3, 5, 64, 129, 255, 256} {
					for _, start := range []int{0, 5, 127, 130, 300} {
						lo := 0
						if cfg.IsSliding(layer) { // as hostOps.Attend reads the cache
							lo = max(0, start-(cfg.SlidingWindow-1))
						}
						name := fmt.Sprintf("%dx%d/%d/layer=%d/causal=%v/c=%d/start=%d", l.heads, l.kvHeads, l.headDim, layer, causal, c, start)
						pre := prefixRows{k: make([][]float32, l.kvHeads), v: make([][]float32, l.kvHeads), n: start - lo, lo: lo}
						for j := range l.kvHeads {
							pre.k[j], pre.v[j] = randFloats32(rng, pre.n*l.headDim), randFloats32(rng, pre.n*l.headDim)
						}
						q := randFloats32(rng, c*l.heads*l.headDim)
						k, v := randFloats32(rng, c*l.kvHeads*l.headDim), randFloats32(rng, c*l.kvHeads*l.headDim)
						want := attendWholeRows(cfg, layer, q, k, v, start, pre, causal)
						h := &hostModel{cfg: cfg, scratch: &hostScratch{}}
						got := h.attend(layer, q, k, v, start, pre, causal)
						for i := range want {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) && got[i] != want[i] {
								t.Fatalf("%s: value %d is %v, the whole rows' %v", name, i, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}

// attendWholeRows is the host attention core as it was before the blocks: per KV head
// the scores of all its query rows against all S keys (MulNT), a softmax over each
// row's visible run with the rest zeroed, then the values, transposed, by MulNT.
func attendWholeRows(cfg *config.Text, i int, q, k, v []float32, start int, pre prefixRows, causal bool) []float32 {
	nh, kvh, hd := cfg.NumAttentionHeads, cfg.KVHeads(i), cfg.LayerHeadDim(i)
	groups := nh / kvh
	c := len(q) / (nh * hd)
	window := 0
	if causal && cfg.IsSliding(i) {
		window = cfg.SlidingWindow
	}
	s := pre.n + c
	att := make([]float32, c*nh*hd)
	K, vt := make([]float32, s*hd), make([]float32, hd*s)
	qg, o := make([]float32, groups*c*hd), make([]float32, groups*c*hd)
	scores := make([]float32, groups*c*s)
	for j := range kvh {
		copy(K, pre.k[j])
		for r := range pre.n {
			for e := range hd {
				vt[e*s+r] = pre.v[j][r*hd+e]
			}
		}
		for t := range c {
			copy(K[(pre.n+t)*hd:(pre.n+t+1)*hd], k[(t*kvh+j)*hd:(t*kvh+j+1)*hd])
			for e := range hd {
				vt[e*s+pre.n+t] = v[(t*kvh+j)*hd+e]
			}
		}
		for g := range groups {
			hh := j*groups + g
			for t := range c {
				copy(qg[(g*c+t)*hd:(g*c+t+1)*hd], q[(t*nh+hh)*hd:(t*nh+hh+1)*hd])
			}
		}
		kernels.MulNT(scores, qg, K, groups*c, s, hd)
		for r := range groups * c {
			row := scores[r*s : (r+1)*s]
			if !causal {
				softmaxInto(row, row, 1)
				continue
			}
			qp := start + r%c
			klo, khi := 0, min(s, qp-pre.lo+1)
			if window > 0 {
				klo = max(0, qp-window+1-pre.lo)
			}
			clear(row[:klo])
			clear(row[khi:])
			softmaxInto(row[klo:khi], row[klo:khi], 1)
		}
		kernels.MulNT(o, scores, vt, groups*c, hd, s)
		for g := range groups {
			hh := j*groups + g
			for t := range c {
				copy(att[(t*nh+hh)*hd:(t*nh+hh+1)*hd], o[(g*c+t)*hd:(g*c+t+1)*hd])
			}
		}
	}
	return att
}

func randFloats32(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}
