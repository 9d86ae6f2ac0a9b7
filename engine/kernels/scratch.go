package kernels

// ScratchBytes is the most float32 scratch one part of a product holds, from the
// package's pool of buffers (kept between products, not per call): the packed panels
// of a and b for one block of the packed path, its edge tile, and the decoded values
// of one row of a stored matrix of cols columns or of one panel of it (a GGUF block
// of 256 values at most on either side of MulNN's columns). A product runs at most
// Workers parts at once, so Workers()·ScratchBytes(cols) is all the kernels hold
// beside the caller's own slices.
func ScratchBytes(cols int) int64 {
	k := gemmKernel
	a := blockM / k.mr * k.mr * blockK
	b := blockN / k.nr * k.nr * blockK
	dec := max(k.nr*blockK, blockN+2*256, cols)
	return 4 * int64(a+b+k.mr*k.nr+dec)
}

// Workers is how many parts of one product run at once: the pool's workers and the
// calling goroutine, one per GOMAXPROCS.
func Workers() int { return workers() }
