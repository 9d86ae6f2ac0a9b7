package model

import (
	"unsafe"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// Reading ahead. A checkpoint's weights are mapped from its files (weights.Mapped)
// and read from disk when first touched, one page fault (and one small read) at a
// time, while the cores wait. The host model tells the kernel what it is about to
// multiply instead: the next layer's attention, MLP and router matrices while it
// computes this one, and a layer's routed experts as soon as the router has chosen
// them (all of them for a canvas, a token's k for AR), so the disk reads them in
// large requests while the cores work. It is advice (madvise MADV_WILLNEED): nothing
// waits for the reads, and weights already in memory — the page cache, or a Set on
// the heap — are left as they are. Each matrix (each expert's rows) is advised the
// first time it is used only: the system call walks the pages even when they are
// all in memory, and an AR token of the 26B would spend 8% of its time on it.

// layerMatrices lists, per layer of cfg, the names of the matrices the layer
// multiplies before its experts: its two-dimensional weights in the weight table
// (weights.Specs) — the attention projections (v_proj on sliding layers only), the
// dense MLP's and the router's. The experts' tensors are three-dimensional, the
// norms, scales and layer_scalar one-dimensional.
func layerMatrices(cfg *config.Text) [][]string {
	names := make([][]string, cfg.NumHiddenLayers)
	for _, s := range weights.Specs(&config.Model{Text: *cfg}) {
		if s.Layer >= 0 && s.Layer < len(names) && len(s.Shape) == 2 {
			names[s.Layer] = append(names[s.Layer], s.Name)
		}
	}
	return names
}

// prefetchLayer advises the kernel that layer i's matrices before the experts are
// needed next. A layer past the last, or a matrix the model lacks, is nothing to read.
func (h *hostModel) prefetchLayer(i int) {
	if i >= h.cfg.NumHiddenLayers {
		return
	}
	if len(h.w.ahead) != h.cfg.NumHiddenLayers {
		h.w.ahead = layerMatrices(h.cfg)
	}
	for _, name := range h.w.ahead[i] {
		if w, err := h.w.load(name); err == nil && len(w.dims) >= 2 {
			h.w.willNeed(w.mat)
		}
	}
}

// willNeed advises the kernel that m's stored bytes are needed soon, unless they
// were advised before.
func (w *hostWeights) willNeed(m hostMatrix) {
	if len(m.q.Data) == 0 {
		return
	}
	at := uintptr(unsafe.Pointer(&m.q.Data[0]))
	if w.advised[at] {
		return
	}
	if w.advised == nil {
		w.advised = map[uintptr]bool{}
	}
	w.advised[at] = true
	for _, b := range [][]byte{m.q.Data, m.q.Scales, m.q.Mins} {
		adviseWillNeed(b)
	}
}

// adviseWillNeed is willNeed's system call; a test replaces it to see what is advised.
var adviseWillNeed = willNeedBytes
