package kernels

// Parts is how many parts the worker pool splits a product [m, k]×[k, n] into, as
// MulNT, Matrix.MulNT and Matrix.MulVec split it: one per parallelMACs multiply-adds
// of a packed product, one per dotMACs of dot products (m < dotRows), at most one per
// worker; 1 runs on the calling goroutine, with no hand-off to the pool. It is for
// callers that count what a pass costs (models/speed) without running it.
func Parts(m, n, k int) int {
	per := parallelMACs
	if m < dotRows {
		per = dotMACs
	}
	return min(workers(), max(1, m*n*k/per))
}
