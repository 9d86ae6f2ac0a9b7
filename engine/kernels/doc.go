// Package kernels holds Darkroom's host compute kernels: the loops that the CPU path
// (engine/model's host model, the training tape in engine/train/hostgrad, the sampler
// and the CLI's benchmarks) spends its time in, in a package of their own so each of
// those can use them without reaching into another. Of the engine it imports only the
// owners of the weight formats (engine/quant, engine/gguf), whose layouts it reads.
//
//   - MulNT, the float32 matrix product out = a·bᵀ: a and b are packed into cache-sized
//     panels (gemm.go's blockM×blockK of a against blockK×blockN of b, transposed 16×16
//     at a time with AVX-512, 8×8 with AVX2) and multiplied by a register-blocked
//     micro-kernel in assembly — 14×32 with AVX-512, 6×16 with AVX2+FMA — or, with -tags
//     noasm or off amd64, by a portable 4×4 kernel over the same panels. Products of
//     fewer than four rows (the AR step) are dot products instead: packing would cost
//     more than it saves. The parts of a product go to a fixed pool of workers, one per
//     core, started once (pool.go).
//   - Gemm, MulNT's packed product with either operand stored transposed (NN, NT, TN)
//     and optionally added into out: the training tape's backward products, packed
//     from their layouts with no transposed copies (train_gemm.go).
//   - ExpShift, the vectorised exponential of a softmax, and Softmax and SoftCap (the
//     logit soft-cap c·tanh(x/c)) built on it.
//   - Head (head.go), the tied LM head fused with the soft-cap, the sampler's
//     per-position statistics (Tempered: argmax, entropy, the inverse-CDF draw) and the
//     next step's soft embedding p·E, a cache-sized block of positions at a time
//     against the embedding packed once, so a denoising step writes no [C, V] array;
//     bit for bit the unfused products and row functions.
//   - Matrix, a weight matrix in its stored format — F32, F16 and bf16, Darkroom's int8
//     (per row or in groups), int4 in groups (symmetric or affine, float32 or bf16 scales) and NVFP4,
//     or GGUF blocks (Q4_K, Q6_K, Q4_0, Q4_1, Q8_0, …) — with MulVec (the AR step: one
//     pass over the weights, each row dotted with x as it is decoded — bf16, int8 and
//     int4 rows in registers without writing the values (with AVX-512 int4 two rows at
//     a time, and an int4 or int8 row decoded once for up to three rows of x), so are
//     GGUF's Q4_K rows (each block's scales decoded in the kernel; with AVX-512 each
//     group's values looked up as int4's are) and, for one row of x, its Q5_0 and Q8_0
//     rows; GGUF's other blocks of 32 and Q5_K's groups of 32 as int8 codes with a
//     scale and, for Q4_1, Q5_1 and Q5_K, a minimum per 32 against x's group sums;
//     the others decoded into an L1-sized buffer and dotted), MulNT
//     and MulNN (the canvas: the packed product, each panel of weights decoded as it is
//     packed), RowRange and DecodeRow (matrix_rows.go), so a model stays as compact in
//     memory as its file. The common formats decode with vector code (vec_amd64.s; the
//     fused dots dotq_amd64.s and the generated dotrows_amd64.s), the rest with
//     engine/gguf's decoders. A damaged matrix (a truncated tensor, a wrong
//     scale or block count) is an error, not a panic.
//   - The integer products (qgemm.go): on CPUs with AVX-512 VNNI, MulNT of Darkroom's
//     int8 and int4 weights (scale groups of 32 or whole rows) and of GGUF's Q4_K,
//     Q5_K, Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 blocks, and MulNN of a per-row
//     int8 embedding (the soft embedding) quantize a's rows to int8 in groups of 32,
//     pack the weights' codes as bytes, and sum each group exactly with VPDPBUSD (64
//     multiply-adds an instruction, a float32 FMA's 16) before scaling it into
//     float32: 2.7× the float path at a 26B expert's shape. NVFP4's blocks of 16 take
//     kernels of their own over groups of 16 (a's rows quantized in 16s too): 2.5×
//     the float path there over a canvas, 3.2× over an expert's 16 rows; so do
//     GGUF's Q3_K, Q2_K and Q6_K, whose scales are per 16 inputs (qgemm_k.go). On CPUs with AVX2 and no
//     VNNI the same kernel runs on ymm registers with AVX-VNNI's VPDPBUSD (Intel's
//     cores since Alder Lake; its machine code is tested here through AVX-512 VL's
//     encoding of the same instructions), and with AVX2 alone the int4, NVFP4, Q4_K,
//     Q4_0 and Q4_1 products take VPMADDUBSW and 16-bit sums (2.1× the AVX2 float path at that shape
//     here, 2.8× over an expert's 16 rows), and so do the 3- and 2-bit Q3_K and Q2_K
//     and the 5-bit Q5_0, Q5_1 and Q5_K in groups of 16, whose 8 products a word holds
//     (Q5_0 at that shape 2.3× the AVX2 float path over a canvas, 4.2× over 16 rows;
//     Q3_K 1.8× and 3.0×); int8, Q8_0 and Q6_K stay float there. a's rounding adds
//     about 0.5% relative error to a product; the model's logits move less than its
//     int4 weights move them (darkroom quantize --compare). IntProducts, IntFormats,
//     IntGGUF, IntKernel and SetIntProducts (and DARKROOM_INT_PRODUCTS=0) say and choose the
//     path. The printer's products of GGUF's Q4_K and Q5_0 rows (fewer than four rows of
//     x) follow it (matrix_introws.go): x quantized once per product, each row dotted
//     from its blocks with VPDPBUSD (AVX-512 VNNI) or VPMADDUBSW (AVX2), as llama.cpp
//     does; their float kernels ran below the memory's rate, these run past it.
//
// We write these rather than call a BLAS because the headless build is CGO_ENABLED=0
// and must stay fast, and no BLAS multiplies GGUF or NVFP4 blocks without widening the
// whole matrix first. Results match float64 references up to float32 rounding and
// summation order (the integer products: up to a's int8 rounding); the vector decoders, ExpShift, Softmax and SoftCap match their
// scalar forms bit for bit (Expf is a vector lane's exponential, each multiply-add
// rounded once), so a row's values do not depend on where its lanes split.
package kernels
