// Package kernels holds Darkroom's host compute kernels: the loops that the CPU path
// (engine/model's host model, the training tape in engine/train/hostgrad, the sampler
// and the CLI's benchmarks) spends its time in. It imports nothing of the engine, so
// each of those can use it without reaching into another.
//
//   - MulNT, the float32 matrix product out = a·bᵀ. On amd64 with AVX2+FMA its inner
//     loop is assembly; elsewhere (or with -tags noasm) plain Go.
//   - ExpShift, the vectorised exponential of a softmax.
//
// We write these rather than call a BLAS because the headless build is CGO_ENABLED=0
// and must stay fast. Results match float64 references up to float32 rounding and
// summation order.
package kernels
