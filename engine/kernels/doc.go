// Package kernels holds Darkroom's host compute kernels: the loops that the CPU path
// (engine/model's host model, the training tape in engine/train/hostgrad, the sampler
// and the CLI's benchmarks) spends its time in. It imports nothing of the engine, so
// each of those can use it without reaching into another.
//
//   - MulNT, the float32 matrix product out = a·bᵀ: a and b are packed into cache-sized
//     panels (gemm.go's blockM×blockK of a against blockK×blockN of b, transposed 16×16
//     at a time with AVX-512) and multiplied by a register-blocked micro-kernel in
//     assembly — 14×32 with AVX-512, 6×16 with AVX2+FMA — or, with -tags noasm or off
//     amd64, by a portable 4×4 kernel over the same panels. The parts of a product go
//     to a fixed pool of workers, one per core, started once (pool.go).
//   - ExpShift, the vectorised exponential of a softmax.
//
// We write these rather than call a BLAS because the headless build is CGO_ENABLED=0
// and must stay fast. Results match float64 references up to float32 rounding and
// summation order.
package kernels
