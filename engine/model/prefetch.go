package model

import (
	"unsafe"

	"github.com/darkroomlabs/darkroom/engine/config"
	"github.com/darkroomlabs/darkroom/engine/sysmem"
	"github.com/darkroomlabs/darkroom/engine/weights"
)

// Reading ahead. A checkpoint's weights are mapped from its files (weights.Mapped)
// and each page is read from disk, or mapped from the page cache, when first touched:
// one page fault at a time while the cores wait. An AR token of a mixture of experts
// touches experts no token touched before for a long while (the 26B with a random
// router: tokens 19–34 faulted ~2,500 times each, on ~0.16 GB of new pages), so
// the host model maps every weight of a mapped checkpoint into the process at once
// (populate: MADV_POPULATE_READ, the disk read in large requests) — what llama.cpp's
// MAP_POPULATE does — when the weights fit in the memory available: as the engine
// loads the model (Runner.ReadWeights, its bytes counted for the screen waiting on
// it), else at its first pass.
// Otherwise, and where the weights cannot be populated, it tells the kernel what it is
// about to multiply instead: the next layer's attention, MLP and router matrices while
// it computes this one, and a layer's routed experts as soon as the router has chosen
// them (all of them for a canvas, a token's k for AR), so the disk reads them in
// large requests while the cores work. That is advice (madvise MADV_WILLNEED):
// nothing waits for the reads, and weights already in memory — the page cache, or a
// Set on the heap — are left as they are. Each matrix (each expert's rows) is advised
// the first time it is used only — the system call walks the pages even when they are
// all in memory, and an AR token of the 26B would spend 8% of its time on it — unless
// the weights do not fit in the memory available (paging): then the kernel drops what
// it read for one token to read the next, and faulting an expert back in page by page
// (128 KB read-ahead at a time) costs far more. The NVFP4 26B under a 10 GB memory
// limit, AR, 48 tokens: 1.6 s a token advised once, 0.85 s advised at every use.

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
		h.w.populate(h.cfg, nil, nil)
	}
	for _, name := range h.w.ahead[i] {
		if w, err := h.w.load(name); err == nil && len(w.dims) >= 2 {
			h.w.willNeed(w.mat)
		}
	}
}

// willNeed advises the kernel that m's stored bytes are needed soon, unless they
// are populated, or were advised before and the weights fit in memory.
func (w *hostWeights) willNeed(m hostMatrix) {
	for _, p := range m.parts {
		w.willNeed(p)
	}
	if m.q == nil || len(m.q.Data) == 0 || w.populated {
		return
	}
	at := uintptr(unsafe.Pointer(&m.q.Data[0]))
	if w.advised[at] && !w.paging {
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

// populateReserve is the memory populate leaves available beside the weights: the
// activations, the KV cache and the rest of the process, and the system's own.
const populateReserve = 2 << 30

// populate maps the stored bytes of every weight cfg's table lists (weights.Specs:
// the experts', the vectors' and the head's too) into the process, when the weights
// are a checkpoint's mapping and they fit in the memory available less
// populateReserve; the weights stay as they are otherwise. The tensors whose first
// Lookup reads them from the file onto the heap (weights.Mapped.FirstRead: a GGUF's
// converted, split and vector tensors, and with DARKROOM_NO_MMAP, which maps nothing,
// all of them) are read first, and counted as they are; the heap needs no populating. A
// tensor that cannot be read is left to fail where it is used. Each mapped tensor is
// advised for read-ahead before the one in front of it is populated, so the disk
// reads the next while the kernel maps the last. It runs once (at the first pass, or
// earlier by ReadWeights); stop, if not nil, is asked before each tensor and ends it
// early (the rest then read on first use), and progress, if not nil, hears the bytes
// read and populated of the total after each.
func (w *hostWeights) populate(cfg *config.Text, stop func() bool, progress func(done, total int64)) {
	if w.tried {
		return
	}
	w.tried = true
	m, ok := w.src.(*weights.Mapped)
	if !ok {
		return
	}
	type read struct {
		name  string
		bytes int64 // m.FirstRead's
	}
	var spans [][]byte // the mapped tensors' bytes
	var reads []read   // the tensors a Lookup reads onto the heap
	var total int64
	for _, s := range weights.Specs(&config.Model{Text: *cfg}) {
		if w.from > 0 && s.Layer < w.from { // the device's (the model is split)
			continue
		}
		if n := m.FirstRead(s.Name); n > 0 {
			reads, total = append(reads, read{s.Name, n}), total+n
			continue
		}
		st, _, ok, err := m.Lookup(s.Name)
		if err != nil || !ok {
			continue
		}
		for _, b := range st.Spans() {
			spans, total = append(spans, b), total+int64(len(b))
		}
	}
	var done int64
	for _, r := range reads {
		if stop != nil && stop() {
			return
		}
		if _, _, _, err := m.Lookup(r.name); err != nil {
			continue
		}
		if done += r.bytes; progress != nil {
			progress(done, total)
		}
	}
	if avail := availableMemory(); len(spans) == 0 || total-done > avail-populateReserve {
		w.populated = len(spans) == 0 && len(reads) > 0 // all on the heap: nothing to advise
		// Paging where the memory is known to be short (0: unknown, off Linux and
		// Windows, where nothing is populated and the weights are advised once).
		if w.paging = len(spans) > 0 && avail > 0; w.paging {
			w.mappedBytes, w.availBytes = total-done, avail
		}
		return
	}
	adviseWillNeed(spans[0])
	for i, b := range spans {
		if stop != nil && stop() {
			return
		}
		if i+1 < len(spans) {
			adviseWillNeed(spans[i+1])
		}
		if err := populatePages(b); err != nil {
			return // the rest are read on first use, as without populate
		}
		if done += int64(len(b)); progress != nil {
			progress(done, total)
		}
	}
	w.populated = true
}

// ReadWeights brings a mapped checkpoint's weights into memory now (populate: when
// they fit beside populateReserve), rather than at the first pass, so that a caller
// can say so while it waits: the 26B's 17 GB take seconds from the page cache and
// minutes from a hard disk. progress, if not nil, hears the bytes read of the total
// as they are; stop, if not nil, is asked between tensors and ends the reading early
// (what is left is read on first use). It does nothing on the graph path, whose
// weights are on the device already (but for a split model's host layers: only
// theirs are read), or when it has run before.
func (r *Runner) ReadWeights(stop func() bool, progress func(done, total int64)) {
	if r.weights != nil && (r.HostDecoder || r.split()) {
		r.weights.populate(r.cfg, stop, progress)
	}
}

// FromDisk reports whether the host model's weights, mapped from the checkpoint's
// files, did not fit in the memory available when populate looked (at ReadWeights or
// the first pass): they are then read from the disk as they are used, and what the
// kernel drops read again. mapped is their bytes, available the memory available
// then (0 where unknown), and room what of it the weights can have (available less
// populateReserve).
func (r *Runner) FromDisk() (mapped, available, room int64, ok bool) {
	if r.weights == nil || !r.weights.paging {
		return 0, 0, 0, false
	}
	w := r.weights
	return w.mappedBytes, w.availBytes, max(0, w.availBytes-populateReserve), true
}

// populatePages and availableMemory are populate's system calls; a test replaces
// them to see what is populated, and when.
var (
	populatePages   = populateBytes
	availableMemory = memoryAvailable
)

// memoryAvailable is the memory this process can use now without swapping
// (sysmem.Read's Available: the machine's, or less under a container's or a
// service's memory limit), in bytes; 0 when it cannot be read.
func memoryAvailable() int64 {
	m, err := sysmem.Read()
	if err != nil {
		return 0
	}
	return m.Available
}
