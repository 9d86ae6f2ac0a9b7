package kernels

// Parts is how many goroutines the worker pool runs a product [m, k]×[k, n] on, as
// MulNT, Matrix.MulNT and Matrix.MulVec split it: packedParts for a packed product,
// dotParts for dot products (m < dotRows; a stored matrix's are cut into up to
// partsPerWorker parts a worker, claimed in turn, but run on no more goroutines than
// workers); 1 runs on the calling goroutine, with no hand-off to the pool. It is for
// callers that count what a pass costs (models/speed) without running it.
func Parts(m, n, k int) int {
	if m < dotRows {
		return min(workers(), dotParts(m*n*k))
	}
	return packedParts(m * n * k)
}
