// Package kernels holds Darkroom's host compute kernels: the loops that the CPU path
// (engine/model's host model, the training tape in engine/train/hostgrad, the sampler
// and the CLI's benchmarks) spends its time in, in a package of their own so each of
// those can use them without reaching into another. Of the engine it imports only the
// owners of the weight formats (engine/quant, engine/gguf), whose layouts it reads.
//
//   - MulNT, the float32 matrix product out = a·bᵀ: a and b are packed into cache-sized
//     panels (gemm.go's blockM×blockK of a against blockK×blockN of b, transposed 16×16
//     at a time with AVX-512) and multiplied by a register-blocked micro-kernel in
//     assembly — 14×32 with AVX-512, 6×16 with AVX2+FMA — or, with -tags noasm or off
//     amd64, by a portable 4×4 kernel over the same panels. The parts of a product go
//     to a fixed pool of workers, one per core, started once (pool.go).
//   - ExpShift, the vectorised exponential of a softmax.
//   - Matrix, a weight matrix in its stored format — bf16, Darkroom's int8 per row,
//     int4 in groups (symmetric or affine, float32 or bf16 scales) and NVFP4, or GGUF
//     blocks (Q4_K, Q6_K, Q4_0, Q4_1, Q8_0, …) — with MulVec (the AR step: one pass over
//     the weights, each row decoded into an L1-sized buffer and dotted) and MulNT (the
//     canvas: MulNT's packed product, each panel of weights decoded as it is packed),
//     so a model stays as compact in memory as its file. A damaged matrix (a truncated
//     tensor, a wrong scale or block count) is an error, not a panic.
//
// We write these rather than call a BLAS because the headless build is CGO_ENABLED=0
// and must stay fast. Results match float64 references up to float32 rounding and
// summation order.
package kernels
