//go:build !noasm

#include "textflag.h"

// SUM_Y0(t) sums Y0's eight lanes into X0's low lane (clobbers t): every dot's end.
#define SUM_Y0(t) \
	VEXTRACTF128 $1, Y0, t; \
	VADDPS t, X0, X0; \
	VHADDPS X0, X0, X0; \
	VHADDPS X0, X0, X0

// SUM_Y0_Y3 is dotAVX2's final sum of its four accumulators Y0–Y3 into X0's low
// lane (clobbers X1): every kernel that must give dotAVX2's bits ends with it.
#define SUM_Y0_Y3 \
	VADDPS Y1, Y0, Y0; \
	VADDPS Y3, Y2, Y2; \
	VADDPS Y2, Y0, Y0; \
	SUM_Y0(X1)

// SUM_Z0_Z1 is the same sum where dotAVX2's 32 lanes are kept in two zmm accumulators
// (values 0–15 and 16–31 of every 32: Z0 = Y0|Y1, Z1 = Y2|Y3), as
// dotInt8w1x1AVX512 ends (clobbers Y12, Y13, X8).
#define SUM_Z0_Z1 \
	VEXTRACTF64X4 $1, Z0, Y12; \
	VEXTRACTF64X4 $1, Z1, Y13; \
	VADDPS Y12, Y0, Y0; \
	VADDPS Y13, Y1, Y1; \
	VADDPS Y1, Y0, Y0; \
	SUM_Y0(X8)

// BLOCK_D(x) widens the fp16 d of the GGUF block at SI (its first two bytes) into
// x's lowest lane, the others zero (VCVTPH2PS: exact, as the decoder's HalfToFloat32);
// clobbers AX. The printer's block dots (BLOCK32_FMA_* broadcast it their own way)
// and the canvas packing's codesQ5_0AVX2 and codesQ8_0AVX2 read each block's d where
// it is instead of a row of them widened beforehand (blockHalves: a tenth of a 26B
// token's time).
#define BLOCK_D(x) \
	MOVWLZX 0(SI), AX; \
	VMOVD AX, x; \
	VCVTPH2PS x, x

// BLOCK32_FMA_Y4_Y7 takes a block of 32 codes widened to int32 in Y4–Y7 (values
// 0–7, 8–15, 16–23, 24–31), makes each value float32(code)·scale, the scale the
// block's fp16 d at 0(SI) broadcast and widened (VCVTPH2PS: exact), as the decoders
// do, and adds its products with x at DI into dotAVX2's accumulators Y0–Y3 (clobbers
// Y8). BLOCK32_FMA_Z8_Z9 is the same for codes in Z8 (values 0–15) and Z9 (16–31) into
// Z0 and Z1 (SUM_Z0_Z1; clobbers Z10).
#define BLOCK32_FMA_Y4_Y7 \
	VPBROADCASTW 0(SI), X8; \
	VCVTPH2PS X8, Y8; \
	VCVTDQ2PS Y4, Y4; \
	VCVTDQ2PS Y5, Y5; \
	VCVTDQ2PS Y6, Y6; \
	VCVTDQ2PS Y7, Y7; \
	VMULPS Y8, Y4, Y4; \
	VMULPS Y8, Y5, Y5; \
	VMULPS Y8, Y6, Y6; \
	VMULPS Y8, Y7, Y7; \
	VFMADD231PS (DI), Y4, Y0; \
	VFMADD231PS 32(DI), Y5, Y1; \
	VFMADD231PS 64(DI), Y6, Y2; \
	VFMADD231PS 96(DI), Y7, Y3

#define BLOCK32_FMA_Z8_Z9 \
	VPBROADCASTW 0(SI), Y10; \
	VCVTPH2PS Y10, Z10; \
	VCVTDQ2PS Z8, Z8; \
	VCVTDQ2PS Z9, Z9; \
	VMULPS Z10, Z8, Z8; \
	VMULPS Z10, Z9, Z9; \
	VFMADD231PS 0(DI), Z8, Z0; \
	VFMADD231PS 64(DI), Z9, Z1

// Q4K_HEADER decodes the Q4_K block header at SI for dotQ4KAVX512 and dotQ4KAVX2
// (Y15 holding the sign bit): d and dmin widened (VCVTPH2PS, exact) into Y5 and −dmin
// into Y6; the eight 6-bit scales and minimums unpacked four at a time in 32-bit
// words as scalesMinsK4 does (u0 = bytes 0–3: scales 0–3 and the high bits of 4–7;
// u1 = bytes 4–7: the minimums likewise; u2 = bytes 8–11: the low nibbles of scales
// and minimums 4–7); group j's scale d·sc_j at j·4(SP) and minimum (−dmin)·m_j at
// 32 + j·4(SP), one rounding each as the decoder's (Q4K_SCALES, then the stores).
// Clobbers AX, BX, DX, R8, R9, R11, X4, Y7, Y8.
#define Q4K_HEADER \
	Q4K_SCALES; \
	VMOVUPS Y7, 0(SP); \
	VMOVUPS Y8, 32(SP)

// Q4K_SCALES is Q4K_HEADER with the scales d·sc_j left in Y7 and the minimums
// (−dmin)·m_j in Y8 instead of on the stack (dotQ4KVNNI).
#define Q4K_SCALES \
	VPBROADCASTD 0(SI), X4; \
	VCVTPH2PS X4, X4; \
	VBROADCASTSS X4, Y5; \
	VMOVSHDUP X4, X4; \
	VBROADCASTSS X4, Y6; \
	VXORPS Y15, Y6, Y6; \
	MOVL 4(SI), R8; \
	MOVL 8(SI), R9; \
	MOVL 12(SI), R11; \
	MOVL R8, AX; \
	ANDL $0x3f3f3f3f, AX; \
	MOVL R11, BX; \
	ANDL $0x0f0f0f0f, BX; \
	MOVL R8, DX; \
	SHRL $2, DX; \
	ANDL $0x30303030, DX; \
	ORL  DX, BX; \
	SHLQ $32, BX; \
	ORQ  BX, AX; \
	VMOVQ AX, X7; \
	MOVL R9, AX; \
	ANDL $0x3f3f3f3f, AX; \
	MOVL R11, BX; \
	SHRL $4, BX; \
	ANDL $0x0f0f0f0f, BX; \
	MOVL R9, DX; \
	SHRL $2, DX; \
	ANDL $0x30303030, DX; \
	ORL  DX, BX; \
	SHLQ $32, BX; \
	ORQ  BX, AX; \
	VMOVQ AX, X8; \
	VPMOVZXBD X7, Y7; \
	VPMOVZXBD X8, Y8; \
	VCVTDQ2PS Y7, Y7; \
	VCVTDQ2PS Y8, Y8; \
	VMULPS Y5, Y7, Y7; \
	VMULPS Y6, Y8, Y8

// func dotAVX2(x, y *float32, n int) float32
// Four ymm accumulators over 32 values per step, summed at the end.
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
dotloop:
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JNZ  dotloop
	SUM_Y0_Y3
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func decodeBF16AVX2(dst *float32, src *byte, n int)
// Each bfloat16 is the top half of its float32: zero-extend to 32 bits, shift left 16.
TEXT ·decodeBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
bf16loop:
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPSLLD $16, Y0, Y0
	VPSLLD $16, Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ  bf16loop
	VZEROUPPER
	RET

// func decodeInt8AVX2(dst *float32, codes *byte, n int, s float32)
TEXT ·decodeInt8AVX2(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ codes+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS s+24(FP), Y7
int8loop:
	VPMOVSXBD (SI), Y0
	VPMOVSXBD 8(SI), Y1
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VMULPS Y7, Y0, Y0
	VMULPS Y7, Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $16, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ  int8loop
	VZEROUPPER
	RET

DATA int4const<>+0(SB)/4, $0x0f
DATA int4const<>+4(SB)/4, $8
GLOBL int4const<>(SB), RODATA|NOPTR, $8

// func decodeInt4AVX2(dst *float32, codes *byte, n int, s float32)
// 8 code bytes → 16 values: each byte zero-extended to a word b, the word
// (b & 0x0f) | (b & 0xf0) << 4 holds the low nibble in its first byte and the high one
// in its second, which is element order; those 16 bytes widen to dwords, minus 8, times s.
TEXT ·decodeInt4AVX2(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ codes+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS s+24(FP), Y7
	VPBROADCASTD int4const<>+4(SB), Y6 // 8
	MOVQ $0x0f0f0f0f0f0f0f0f, AX
	VMOVQ AX, X5
	VPBROADCASTQ X5, X5                // 0x0f bytes
int4loop:
	VPMOVZXBW (SI), X0                 // 8 bytes → 8 words
	VPSLLW $4, X0, X1                  // high nibble moved to the word's second byte
	VPOR X1, X0, X0
	VPAND X5, X0, X0                   // bytes: lo0 hi0 lo1 hi1 …
	VPMOVZXBD X0, Y1                   // first 8 values
	VPSRLDQ $8, X0, X2
	VPMOVZXBD X2, Y2                   // last 8
	VPSUBD Y6, Y1, Y1
	VPSUBD Y6, Y2, Y2
	VCVTDQ2PS Y1, Y1
	VCVTDQ2PS Y2, Y2
	VMULPS Y7, Y1, Y1
	VMULPS Y7, Y2, Y2
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	ADDQ $8, SI
	ADDQ $64, DI
	SUBQ $8, CX
	JNZ  int4loop
	VZEROUPPER
	RET

DATA nibconst<>+0(SB)/4, $0x0f
GLOBL nibconst<>(SB), RODATA|NOPTR, $4

// func decodeInt4RunsAVX2(dst *float32, codes *byte, groups int, scales, mins *float32, off int32)
// Groups of 32 values in 16 bytes, Darkroom's order (value 2i the low nibble of byte
// i, 2i+1 the high one): value = (nibble − off)·scales[g] + mins[g]. The 16 bytes
// zero-extend to words b; (b | b<<4) & 0x0f0f… puts the nibbles in value order, one
// per byte, and those widen to dwords.
TEXT ·decodeInt4RunsAVX2(SB), NOSPLIT, $0-44
	MOVQ dst+0(FP), DI
	MOVQ codes+8(FP), SI
	MOVQ groups+16(FP), CX
	MOVQ scales+24(FP), DX
	MOVQ mins+32(FP), R10
	MOVL off+40(FP), AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VPBROADCASTB nibconst<>+0(SB), Y14
i4loop:
	VBROADCASTSS (DX), Y13           // scale
	VBROADCASTSS (R10), Y12          // min
	VPMOVZXBW (SI), Y0
	VPSLLW $4, Y0, Y1
	VPOR Y1, Y0, Y0
	VPAND Y14, Y0, Y0                // 32 nibbles in value order
	VEXTRACTI128 $1, Y0, X2
	VPSRLDQ $8, X0, X1
	VPSRLDQ $8, X2, X3
	VPMOVZXBD X0, Y4
	VPMOVZXBD X1, Y5
	VPMOVZXBD X2, Y6
	VPMOVZXBD X3, Y7
	VPSUBD Y15, Y4, Y4
	VPSUBD Y15, Y5, Y5
	VPSUBD Y15, Y6, Y6
	VPSUBD Y15, Y7, Y7
	VCVTDQ2PS Y4, Y4
	VCVTDQ2PS Y5, Y5
	VCVTDQ2PS Y6, Y6
	VCVTDQ2PS Y7, Y7
	VMULPS Y13, Y4, Y4
	VMULPS Y13, Y5, Y5
	VMULPS Y13, Y6, Y6
	VMULPS Y13, Y7, Y7
	VADDPS Y12, Y4, Y4
	VADDPS Y12, Y5, Y5
	VADDPS Y12, Y6, Y6
	VADDPS Y12, Y7, Y7
	VMOVUPS Y4, (DI)
	VMOVUPS Y5, 32(DI)
	VMOVUPS Y6, 64(DI)
	VMOVUPS Y7, 96(DI)
	ADDQ $16, SI
	ADDQ $128, DI
	ADDQ $4, DX
	ADDQ $4, R10
	DECQ CX
	JNZ  i4loop
	VZEROUPPER
	RET

// func decodeNibbleRunsAVX2(dst *float32, src *byte, runs, runBytes, stride int, sm *float32, off int32)
// ggml's 4-bit layout: a run of runBytes (a multiple of 8) bytes holds runBytes values
// in its low nibbles, then runBytes more in its high nibbles; runs start stride bytes
// apart; per run sm holds {scale, min} for the low values and then for the high ones:
// value = (nibble − off)·scale + min.
TEXT ·decodeNibbleRunsAVX2(SB), NOSPLIT, $0-52
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ runs+16(FP), CX
	MOVQ runBytes+24(FP), R8
	MOVQ stride+32(FP), R11
	SUBQ R8, R11                     // from a run's end to the next run
	MOVQ sm+40(FP), DX
	MOVL off+48(FP), AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VPBROADCASTD nibconst<>+0(SB), Y14
	MOVQ R8, R9
	SHLQ $2, R9                      // bytes from a low value to its high partner
nrun:
	VBROADCASTSS (DX), Y13
	VBROADCASTSS 4(DX), Y12
	VBROADCASTSS 8(DX), Y11
	VBROADCASTSS 12(DX), Y10
	MOVQ R8, BX
nloop:
	VPMOVZXBD (SI), Y0
	VPSRLD $4, Y0, Y1
	VPAND Y14, Y0, Y0
	VPSUBD Y15, Y0, Y0
	VPSUBD Y15, Y1, Y1
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VMULPS Y13, Y0, Y0
	VMULPS Y11, Y1, Y1
	VADDPS Y12, Y0, Y0
	VADDPS Y10, Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, (DI)(R9*1)
	ADDQ $8, SI
	ADDQ $32, DI
	SUBQ $8, BX
	JNZ  nloop
	ADDQ R9, DI                      // past the high values
	ADDQ R11, SI
	ADDQ $16, DX
	DECQ CX
	JNZ  nrun
	VZEROUPPER
	RET

// func decodeQ8BlocksAVX2(dst *float32, src *byte, blocks int, scales *float32)
// GGUF Q8_0 blocks {fp16 d; i8 qs[32]} (34 bytes): value = float32(q)·scales[b], the
// block scales widened beforehand.
TEXT ·decodeQ8BlocksAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ blocks+16(FP), CX
	MOVQ scales+24(FP), DX
q8loop:
	VBROADCASTSS (DX), Y7
	VPMOVSXBD 2(SI), Y0
	VPMOVSXBD 10(SI), Y1
	VPMOVSXBD 18(SI), Y2
	VPMOVSXBD 26(SI), Y3
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VCVTDQ2PS Y2, Y2
	VCVTDQ2PS Y3, Y3
	VMULPS Y7, Y0, Y0
	VMULPS Y7, Y1, Y1
	VMULPS Y7, Y2, Y2
	VMULPS Y7, Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $34, SI
	ADDQ $128, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  q8loop
	VZEROUPPER
	RET

DATA e2m1<>+0(SB)/4, $0.0
DATA e2m1<>+4(SB)/4, $0.5
DATA e2m1<>+8(SB)/4, $1.0
DATA e2m1<>+12(SB)/4, $1.5
DATA e2m1<>+16(SB)/4, $2.0
DATA e2m1<>+20(SB)/4, $3.0
DATA e2m1<>+24(SB)/4, $4.0
DATA e2m1<>+28(SB)/4, $6.0
DATA e2m1<>+32(SB)/4, $0x80000000
GLOBL e2m1<>(SB), RODATA|NOPTR, $36

// func decodeE2M1RunsAVX2(dst *float32, codes *byte, groups int, scales *float32)
// NVFP4 blocks of 16 values in 8 bytes (Darkroom's nibble order): the magnitude is
// the table entry of the code's low 3 bits (VPERMPS reads only those), bit 3 the sign,
// times the block's scale.
TEXT ·decodeE2M1RunsAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ codes+8(FP), SI
	MOVQ groups+16(FP), CX
	MOVQ scales+24(FP), DX
	VMOVUPS e2m1<>+0(SB), Y15
	VPBROADCASTD e2m1<>+32(SB), Y14
	VPBROADCASTB nibconst<>+0(SB), X13
fp4loop:
	VBROADCASTSS (DX), Y12
	VPMOVZXBW (SI), X0
	VPSLLW $4, X0, X1
	VPOR X1, X0, X0
	VPAND X13, X0, X0                // 16 codes in value order
	VPSRLDQ $8, X0, X1
	VPMOVZXBD X0, Y2
	VPMOVZXBD X1, Y3
	VPERMPS Y15, Y2, Y4
	VPERMPS Y15, Y3, Y5
	VPSLLD $28, Y2, Y2
	VPSLLD $28, Y3, Y3
	VPAND Y14, Y2, Y2
	VPAND Y14, Y3, Y3
	VPOR Y2, Y4, Y4
	VPOR Y3, Y5, Y5
	VMULPS Y12, Y4, Y4
	VMULPS Y12, Y5, Y5
	VMOVUPS Y4, (DI)
	VMOVUPS Y5, 32(DI)
	ADDQ $8, SI
	ADDQ $64, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  fp4loop
	VZEROUPPER
	RET

DATA q6const<>+0(SB)/4, $15
DATA q6const<>+4(SB)/4, $3
DATA q6const<>+8(SB)/4, $32
GLOBL q6const<>(SB), RODATA|NOPTR, $12

// func decodeQ6KAVX2(dst *float32, blk *byte, ds *float32)
// One GGUF Q6_K block {u8 ql[128]; u8 qh[64]; i8 scales[16]; fp16 d} (256 values):
// value = ds[s]·(q − 32), ds the sixteen d·scale products, q's low 4 bits from ql and
// high 2 from qh, in ggml's order (dequantize_row_q6_K): per half of 128, value l, l+32,
// l+64, l+96 come from ql[l] low, ql[l+32] low, ql[l] high, ql[l+32] high and the
// 2-bit fields 0, 1, 2, 3 of qh[l], with scales l/16 + 0, 2, 4, 6.
TEXT ·decodeQ6KAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ blk+8(FP), SI
	MOVQ ds+16(FP), DX
	VPBROADCASTD q6const<>+0(SB), Y15 // 15
	VPBROADCASTD q6const<>+4(SB), Y14 // 3
	VPBROADCASTD q6const<>+8(SB), Y13 // 32
	// half 0, values 0…7
	VPMOVZXBD 0(SI), Y0
	VPMOVZXBD 32(SI), Y1
	VPMOVZXBD 128(SI), Y2
	VPAND Y15, Y0, Y4
	VPAND Y14, Y2, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y4, Y4
	VPSUBD Y13, Y4, Y4
	VCVTDQ2PS Y4, Y4
	VBROADCASTSS 0(DX), Y8
	VMULPS Y8, Y4, Y4
	VMOVUPS Y4, 0(DI)
	VPAND Y15, Y1, Y5
	VPSRLD $2, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y5, Y5
	VPSUBD Y13, Y5, Y5
	VCVTDQ2PS Y5, Y5
	VBROADCASTSS 8(DX), Y8
	VMULPS Y8, Y5, Y5
	VMOVUPS Y5, 128(DI)
	VPSRLD $4, Y0, Y6
	VPSRLD $4, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y6, Y6
	VPSUBD Y13, Y6, Y6
	VCVTDQ2PS Y6, Y6
	VBROADCASTSS 16(DX), Y8
	VMULPS Y8, Y6, Y6
	VMOVUPS Y6, 256(DI)
	VPSRLD $4, Y1, Y7
	VPSRLD $6, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y7, Y7
	VPSUBD Y13, Y7, Y7
	VCVTDQ2PS Y7, Y7
	VBROADCASTSS 24(DX), Y8
	VMULPS Y8, Y7, Y7
	VMOVUPS Y7, 384(DI)
	// half 0, values 8…15
	VPMOVZXBD 8(SI), Y0
	VPMOVZXBD 40(SI), Y1
	VPMOVZXBD 136(SI), Y2
	VPAND Y15, Y0, Y4
	VPAND Y14, Y2, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y4, Y4
	VPSUBD Y13, Y4, Y4
	VCVTDQ2PS Y4, Y4
	VBROADCASTSS 0(DX), Y8
	VMULPS Y8, Y4, Y4
	VMOVUPS Y4, 32(DI)
	VPAND Y15, Y1, Y5
	VPSRLD $2, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y5, Y5
	VPSUBD Y13, Y5, Y5
	VCVTDQ2PS Y5, Y5
	VBROADCASTSS 8(DX), Y8
	VMULPS Y8, Y5, Y5
	VMOVUPS Y5, 160(DI)
	VPSRLD $4, Y0, Y6
	VPSRLD $4, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y6, Y6
	VPSUBD Y13, Y6, Y6
	VCVTDQ2PS Y6, Y6
	VBROADCASTSS 16(DX), Y8
	VMULPS Y8, Y6, Y6
	VMOVUPS Y6, 288(DI)
	VPSRLD $4, Y1, Y7
	VPSRLD $6, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y7, Y7
	VPSUBD Y13, Y7, Y7
	VCVTDQ2PS Y7, Y7
	VBROADCASTSS 24(DX), Y8
	VMULPS Y8, Y7, Y7
	VMOVUPS Y7, 416(DI)
	// half 0, values 16…23
	VPMOVZXBD 16(SI), Y0
	VPMOVZXBD 48(SI), Y1
	VPMOVZXBD 144(SI), Y2
	VPAND Y15, Y0, Y4
	VPAND Y14, Y2, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y4, Y4
	VPSUBD Y13, Y4, Y4
	VCVTDQ2PS Y4, Y4
	VBROADCASTSS 4(DX), Y8
	VMULPS Y8, Y4, Y4
	VMOVUPS Y4, 64(DI)
	VPAND Y15, Y1, Y5
	VPSRLD $2, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y5, Y5
	VPSUBD Y13, Y5, Y5
	VCVTDQ2PS Y5, Y5
	VBROADCASTSS 12(DX), Y8
	VMULPS Y8, Y5, Y5
	VMOVUPS Y5, 192(DI)
	VPSRLD $4, Y0, Y6
	VPSRLD $4, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y6, Y6
	VPSUBD Y13, Y6, Y6
	VCVTDQ2PS Y6, Y6
	VBROADCASTSS 20(DX), Y8
	VMULPS Y8, Y6, Y6
	VMOVUPS Y6, 320(DI)
	VPSRLD $4, Y1, Y7
	VPSRLD $6, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y7, Y7
	VPSUBD Y13, Y7, Y7
	VCVTDQ2PS Y7, Y7
	VBROADCASTSS 28(DX), Y8
	VMULPS Y8, Y7, Y7
	VMOVUPS Y7, 448(DI)
	// half 0, values 24…31
	VPMOVZXBD 24(SI), Y0
	VPMOVZXBD 56(SI), Y1
	VPMOVZXBD 152(SI), Y2
	VPAND Y15, Y0, Y4
	VPAND Y14, Y2, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y4, Y4
	VPSUBD Y13, Y4, Y4
	VCVTDQ2PS Y4, Y4
	VBROADCASTSS 4(DX), Y8
	VMULPS Y8, Y4, Y4
	VMOVUPS Y4, 96(DI)
	VPAND Y15, Y1, Y5
	VPSRLD $2, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y5, Y5
	VPSUBD Y13, Y5, Y5
	VCVTDQ2PS Y5, Y5
	VBROADCASTSS 12(DX), Y8
	VMULPS Y8, Y5, Y5
	VMOVUPS Y5, 224(DI)
	VPSRLD $4, Y0, Y6
	VPSRLD $4, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y6, Y6
	VPSUBD Y13, Y6, Y6
	VCVTDQ2PS Y6, Y6
	VBROADCASTSS 20(DX), Y8
	VMULPS Y8, Y6, Y6
	VMOVUPS Y6, 352(DI)
	VPSRLD $4, Y1, Y7
	VPSRLD $6, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y7, Y7
	VPSUBD Y13, Y7, Y7
	VCVTDQ2PS Y7, Y7
	VBROADCASTSS 28(DX), Y8
	VMULPS Y8, Y7, Y7
	VMOVUPS Y7, 480(DI)
	// half 1, values 0…7
	VPMOVZXBD 64(SI), Y0
	VPMOVZXBD 96(SI), Y1
	VPMOVZXBD 160(SI), Y2
	VPAND Y15, Y0, Y4
	VPAND Y14, Y2, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y4, Y4
	VPSUBD Y13, Y4, Y4
	VCVTDQ2PS Y4, Y4
	VBROADCASTSS 32(DX), Y8
	VMULPS Y8, Y4, Y4
	VMOVUPS Y4, 512(DI)
	VPAND Y15, Y1, Y5
	VPSRLD $2, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y5, Y5
	VPSUBD Y13, Y5, Y5
	VCVTDQ2PS Y5, Y5
	VBROADCASTSS 40(DX), Y8
	VMULPS Y8, Y5, Y5
	VMOVUPS Y5, 640(DI)
	VPSRLD $4, Y0, Y6
	VPSRLD $4, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y6, Y6
	VPSUBD Y13, Y6, Y6
	VCVTDQ2PS Y6, Y6
	VBROADCASTSS 48(DX), Y8
	VMULPS Y8, Y6, Y6
	VMOVUPS Y6, 768(DI)
	VPSRLD $4, Y1, Y7
	VPSRLD $6, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y7, Y7
	VPSUBD Y13, Y7, Y7
	VCVTDQ2PS Y7, Y7
	VBROADCASTSS 56(DX), Y8
	VMULPS Y8, Y7, Y7
	VMOVUPS Y7, 896(DI)
	// half 1, values 8…15
	VPMOVZXBD 72(SI), Y0
	VPMOVZXBD 104(SI), Y1
	VPMOVZXBD 168(SI), Y2
	VPAND Y15, Y0, Y4
	VPAND Y14, Y2, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y4, Y4
	VPSUBD Y13, Y4, Y4
	VCVTDQ2PS Y4, Y4
	VBROADCASTSS 32(DX), Y8
	VMULPS Y8, Y4, Y4
	VMOVUPS Y4, 544(DI)
	VPAND Y15, Y1, Y5
	VPSRLD $2, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y5, Y5
	VPSUBD Y13, Y5, Y5
	VCVTDQ2PS Y5, Y5
	VBROADCASTSS 40(DX), Y8
	VMULPS Y8, Y5, Y5
	VMOVUPS Y5, 672(DI)
	VPSRLD $4, Y0, Y6
	VPSRLD $4, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y6, Y6
	VPSUBD Y13, Y6, Y6
	VCVTDQ2PS Y6, Y6
	VBROADCASTSS 48(DX), Y8
	VMULPS Y8, Y6, Y6
	VMOVUPS Y6, 800(DI)
	VPSRLD $4, Y1, Y7
	VPSRLD $6, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y7, Y7
	VPSUBD Y13, Y7, Y7
	VCVTDQ2PS Y7, Y7
	VBROADCASTSS 56(DX), Y8
	VMULPS Y8, Y7, Y7
	VMOVUPS Y7, 928(DI)
	// half 1, values 16…23
	VPMOVZXBD 80(SI), Y0
	VPMOVZXBD 112(SI), Y1
	VPMOVZXBD 176(SI), Y2
	VPAND Y15, Y0, Y4
	VPAND Y14, Y2, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y4, Y4
	VPSUBD Y13, Y4, Y4
	VCVTDQ2PS Y4, Y4
	VBROADCASTSS 36(DX), Y8
	VMULPS Y8, Y4, Y4
	VMOVUPS Y4, 576(DI)
	VPAND Y15, Y1, Y5
	VPSRLD $2, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y5, Y5
	VPSUBD Y13, Y5, Y5
	VCVTDQ2PS Y5, Y5
	VBROADCASTSS 44(DX), Y8
	VMULPS Y8, Y5, Y5
	VMOVUPS Y5, 704(DI)
	VPSRLD $4, Y0, Y6
	VPSRLD $4, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y6, Y6
	VPSUBD Y13, Y6, Y6
	VCVTDQ2PS Y6, Y6
	VBROADCASTSS 52(DX), Y8
	VMULPS Y8, Y6, Y6
	VMOVUPS Y6, 832(DI)
	VPSRLD $4, Y1, Y7
	VPSRLD $6, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y7, Y7
	VPSUBD Y13, Y7, Y7
	VCVTDQ2PS Y7, Y7
	VBROADCASTSS 60(DX), Y8
	VMULPS Y8, Y7, Y7
	VMOVUPS Y7, 960(DI)
	// half 1, values 24…31
	VPMOVZXBD 88(SI), Y0
	VPMOVZXBD 120(SI), Y1
	VPMOVZXBD 184(SI), Y2
	VPAND Y15, Y0, Y4
	VPAND Y14, Y2, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y4, Y4
	VPSUBD Y13, Y4, Y4
	VCVTDQ2PS Y4, Y4
	VBROADCASTSS 36(DX), Y8
	VMULPS Y8, Y4, Y4
	VMOVUPS Y4, 608(DI)
	VPAND Y15, Y1, Y5
	VPSRLD $2, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y5, Y5
	VPSUBD Y13, Y5, Y5
	VCVTDQ2PS Y5, Y5
	VBROADCASTSS 44(DX), Y8
	VMULPS Y8, Y5, Y5
	VMOVUPS Y5, 736(DI)
	VPSRLD $4, Y0, Y6
	VPSRLD $4, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y6, Y6
	VPSUBD Y13, Y6, Y6
	VCVTDQ2PS Y6, Y6
	VBROADCASTSS 52(DX), Y8
	VMULPS Y8, Y6, Y6
	VMOVUPS Y6, 864(DI)
	VPSRLD $4, Y1, Y7
	VPSRLD $6, Y2, Y3
	VPAND Y14, Y3, Y3
	VPSLLD $4, Y3, Y3
	VPOR Y3, Y7, Y7
	VPSUBD Y13, Y7, Y7
	VCVTDQ2PS Y7, Y7
	VBROADCASTSS 60(DX), Y8
	VMULPS Y8, Y7, Y7
	VMOVUPS Y7, 992(DI)
	VZEROUPPER
	RET

// func dotNibbleRunsAVX2(x *float32, src *byte, runs, runBytes, stride, groupRuns, skip int, scales *float32) float32
// Σ over runs of ggml's split-nibble layout (decodeNibbleRunsAVX2) of nibble·scale·x,
// without writing the values: run r's low nibbles pair with x[2·runBytes·r + i], its
// high ones with x[2·runBytes·r + runBytes + i], scaled by scales[2r] and
// scales[2r+1]. runBytes is a multiple of 16. Runs are stride bytes apart, and after
// every groupRuns runs skip bytes more (a Q4_K block's header). The minimums are the
// caller's (Σ x per half-run times the minimum).
TEXT ·dotNibbleRunsAVX2(SB), NOSPLIT, $0-68
	MOVQ x+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ runs+16(FP), CX
	MOVQ runBytes+24(FP), R8
	MOVQ stride+32(FP), R11
	SUBQ R8, R11                     // from a run's end to the next run
	MOVQ groupRuns+40(FP), R12
	MOVQ R12, R10                    // runs left in this group
	MOVQ skip+48(FP), R13
	MOVQ scales+56(FP), DX
	VPBROADCASTD nibconst<>+0(SB), Y14
	MOVQ R8, R9
	SHLQ $2, R9                      // bytes from a low value's x to its high partner's
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
drun:
	VBROADCASTSS (DX), Y13           // low values' scale
	VBROADCASTSS 4(DX), Y12          // high values'
	MOVQ R8, BX
dloop:
	VPMOVZXBD (SI), Y4
	VPMOVZXBD 8(SI), Y5
	VPSRLD $4, Y4, Y6
	VPSRLD $4, Y5, Y7
	VPAND Y14, Y4, Y4
	VPAND Y14, Y5, Y5
	VCVTDQ2PS Y4, Y4
	VCVTDQ2PS Y5, Y5
	VCVTDQ2PS Y6, Y6
	VCVTDQ2PS Y7, Y7
	VMULPS Y13, Y4, Y4
	VMULPS Y13, Y5, Y5
	VMULPS Y12, Y6, Y6
	VMULPS Y12, Y7, Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS (DI)(R9*1), Y6, Y2
	VFMADD231PS 32(DI)(R9*1), Y7, Y3
	ADDQ $16, SI
	ADDQ $64, DI
	SUBQ $16, BX
	JNZ  dloop
	ADDQ R9, DI                      // past the high values' x
	ADDQ R11, SI
	ADDQ $8, DX
	DECQ R10
	JNZ  dsame
	ADDQ R13, SI                     // past the next group's header
	MOVQ R12, R10
dsame:
	DECQ CX
	JNZ  drun
	SUM_Y0_Y3
	VMOVSS X0, ret+64(FP)
	VZEROUPPER
	RET

// func decodeF16F16C(dst *float32, src *byte, n int)
// IEEE binary16 to float32 (exact) for n (a positive multiple of 16) values.
TEXT ·decodeF16F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
f16loop:
	VCVTPH2PS (SI), Y0
	VCVTPH2PS 16(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ  f16loop
	VZEROUPPER
	RET

// func dotBF16AVX2(x *float32, src *byte, n int) float32
// dotAVX2 of x with n (a positive multiple of 32) bfloat16 values, widened in
// registers: the same accumulators, order and final sum, so the same bits as widening
// them first.
TEXT ·dotBF16AVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
bdotloop:
	VPMOVZXWD (SI), Y4
	VPMOVZXWD 16(SI), Y5
	VPMOVZXWD 32(SI), Y6
	VPMOVZXWD 48(SI), Y7
	VPSLLD $16, Y4, Y4
	VPSLLD $16, Y5, Y5
	VPSLLD $16, Y6, Y6
	VPSLLD $16, Y7, Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JNZ  bdotloop
	SUM_Y0_Y3
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET


// 0, 1, …, 15 as float32: an affine group's table before its scale and minimum.
DATA q4kiota<>+0(SB)/4, $0.0
DATA q4kiota<>+4(SB)/4, $1.0
DATA q4kiota<>+8(SB)/4, $2.0
DATA q4kiota<>+12(SB)/4, $3.0
DATA q4kiota<>+16(SB)/4, $4.0
DATA q4kiota<>+20(SB)/4, $5.0
DATA q4kiota<>+24(SB)/4, $6.0
DATA q4kiota<>+28(SB)/4, $7.0
DATA q4kiota<>+32(SB)/4, $8.0
DATA q4kiota<>+36(SB)/4, $9.0
DATA q4kiota<>+40(SB)/4, $10.0
DATA q4kiota<>+44(SB)/4, $11.0
DATA q4kiota<>+48(SB)/4, $12.0
DATA q4kiota<>+52(SB)/4, $13.0
DATA q4kiota<>+56(SB)/4, $14.0
DATA q4kiota<>+60(SB)/4, $15.0
GLOBL q4kiota<>(SB), RODATA|NOPTR, $64

// func dotQ4KAVX512(x *float32, src *byte, nb int) float32
// Σ decoded value · x over nb (> 0) Q4_K blocks of 144 bytes {fp16 d; fp16 dmin; u8
// scales[12]; u8 qs[128]}, x in the blocks' order. Each block's header is decoded
// here: d and dmin widened (VCVTPH2PS, exact), the eight 6-bit scales and minimums
// unpacked four at a time in 32-bit words as scalesMinsK4 does, group j's scale
// d·sc_j and minimum (−dmin)·m_j (one rounding each, as the decoder's d·sc_j and
// −(dmin·m_j)) kept on the stack. Then four runs of 32 code bytes, run r's low
// nibbles group 2r's 32 values and its high nibbles group 2r+1's: group g's value of
// code q is scale·q + minimum, looked up in a 16-entry table with VPERMPS (which
// reads an index's low four bits: the low nibble of a widened byte as it is, the high
// one after a shift), as dotInt4w1x1AVX512 does Darkroom's int4: the decoder's values,
// with no conversion or mask per code.
TEXT ·dotQ4KAVX512(SB), NOSPLIT, $64-28
	MOVQ x+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nb+16(FP), CX
	VMOVUPS q4kiota<>+0(SB), Z30
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	MOVL $0x80000000, AX
	VPBROADCASTD AX, Y15             // the sign bit
q4kblock:
	Q4K_HEADER
	ADDQ $16, SI                     // past the header
	XORQ DX, DX                      // the group pair's offset on the stack
q4krun:
	VMULPS.BCST 0(SP)(DX*1), Z30, Z8      // the low nibbles' group's table
	VADDPS.BCST 32(SP)(DX*1), Z8, Z8
	VMULPS.BCST 4(SP)(DX*1), Z30, Z11     // the high nibbles'
	VADDPS.BCST 36(SP)(DX*1), Z11, Z11
	VPMOVZXBD 0(SI), Z9
	VPMOVZXBD 16(SI), Z12
	VPSRLD $4, Z9, Z10
	VPSRLD $4, Z12, Z13
	VPERMPS Z8, Z9, Z9               // values 0–15 of the low group
	VPERMPS Z8, Z12, Z12             // 16–31
	VPERMPS Z11, Z10, Z10            // of the high group
	VPERMPS Z11, Z13, Z13
	VFMADD231PS 0(DI), Z9, Z0
	VFMADD231PS 64(DI), Z12, Z1
	VFMADD231PS 128(DI), Z10, Z2
	VFMADD231PS 192(DI), Z13, Z3
	ADDQ $32, SI
	ADDQ $256, DI
	ADDQ $8, DX
	CMPQ DX, $32
	JNE  q4krun
	DECQ CX
	JNZ  q4kblock
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	SUM_Y0(X1)
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotQ5_0AVX512(x *float32, src *byte, nb int) float32
// dotAVX2 of x with nb (> 0) Q5_0 blocks of 22 bytes {fp16 d; u8 qh[4]; u8 qs[16]}
// decoded, without writing them: block b's value i is float32(q − 16)·d_b, q
// the low nibble of qs[i] (i < 16) or the high one of qs[i−16], bit i of qh above it
// (set by a masked OR from qh's bits in K1 and K2). Values 0–15 and 16–31 of each
// block go into two accumulators, one FMA each in order, and end with dotAVX2's sum of
// its four vectors, as dotInt8w1x1AVX512 does: bit for bit dotAVX2 with the decoded
// row.
TEXT ·dotQ5_0AVX512(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nb+16(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	MOVL $15, AX
	VPBROADCASTD AX, Z14
	MOVL $16, AX
	VPBROADCASTD AX, Z15
q50block:
	MOVL 2(SI), AX                   // qh
	KMOVW AX, K1
	SHRL $16, AX
	KMOVW AX, K2
	VPMOVZXBD 6(SI), Z8
	VPSRLD $4, Z8, Z9
	VPANDD Z14, Z8, Z8
	VPORD Z15, Z8, K1, Z8            // the fifth bit
	VPORD Z15, Z9, K2, Z9
	VPSUBD Z15, Z8, Z8
	VPSUBD Z15, Z9, Z9
	BLOCK32_FMA_Z8_Z9
	ADDQ $22, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  q50block
	SUM_Z0_Z1
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotQ8_0AVX512(x *float32, src *byte, nb int) float32
// dotQ5_0AVX512 for Q8_0 blocks of 34 bytes {fp16 d; i8 qs[32]}: value i is
// float32(qs[i])·d; bit for bit dotAVX2 with the decoded row.
TEXT ·dotQ8_0AVX512(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nb+16(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
q80block:
	VPMOVSXBD 2(SI), Z8
	VPMOVSXBD 18(SI), Z9
	BLOCK32_FMA_Z8_Z9
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  q80block
	SUM_Z0_Z1
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotQ4KAVX2(x *float32, src *byte, nb int) float32
// dotQ4KAVX512's sum with AVX2 (and F16C): the headers decoded the same way; each
// code converted and made its value scale·q + minimum with one FMA (one rounding
// where the decoder has two), then multiplied into x's in four accumulators.
TEXT ·dotQ4KAVX2(SB), NOSPLIT, $64-28
	MOVQ x+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nb+16(FP), CX
	VPBROADCASTD nibconst<>+0(SB), Y14
	MOVL $0x80000000, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15            // the sign bit
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
q4k2block:
	Q4K_HEADER
	ADDQ $16, SI                     // past the header
	XORQ DX, DX                      // the group pair's offset on the stack
q4k2run:
	VBROADCASTSS 0(SP)(DX*1), Y8     // the low nibbles' group: scale, minimum
	VBROADCASTSS 32(SP)(DX*1), Y9
	VBROADCASTSS 4(SP)(DX*1), Y10    // the high nibbles'
	VBROADCASTSS 36(SP)(DX*1), Y11
	MOVQ $2, BX
q4k2half:
	VPMOVZXBD (SI), Y4
	VPMOVZXBD 8(SI), Y5
	VPSRLD $4, Y4, Y6
	VPSRLD $4, Y5, Y7
	VPAND Y14, Y4, Y4
	VPAND Y14, Y5, Y5
	VCVTDQ2PS Y4, Y4
	VCVTDQ2PS Y5, Y5
	VCVTDQ2PS Y6, Y6
	VCVTDQ2PS Y7, Y7
	VFMADD213PS Y9, Y8, Y4           // scale·q + minimum
	VFMADD213PS Y9, Y8, Y5
	VFMADD213PS Y11, Y10, Y6
	VFMADD213PS Y11, Y10, Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 128(DI), Y6, Y2
	VFMADD231PS 160(DI), Y7, Y3
	ADDQ $16, SI
	ADDQ $64, DI
	DECQ BX
	JNZ  q4k2half
	ADDQ $128, DI                    // past the high nibbles' x
	ADDQ $8, DX
	CMPQ DX, $32
	JNE  q4k2run
	DECQ CX
	JNZ  q4k2block
	SUM_Y0_Y3
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// Lane shifts of Q5_0's qh for dotQ5_0AVX2: values 0–7, 8–15, 16–23, 24–31.
DATA q5shift<>+0(SB)/4, $0
DATA q5shift<>+4(SB)/4, $1
DATA q5shift<>+8(SB)/4, $2
DATA q5shift<>+12(SB)/4, $3
DATA q5shift<>+16(SB)/4, $4
DATA q5shift<>+20(SB)/4, $5
DATA q5shift<>+24(SB)/4, $6
DATA q5shift<>+28(SB)/4, $7
GLOBL q5shift<>(SB), RODATA|NOPTR, $32

// func dotQ8_0AVX2(x *float32, src *byte, nb int) float32
// dotQ8_0AVX512 with AVX2: dotAVX2's four accumulators, values 8c…8c+7 of each block
// into accumulator c, one FMA each in order; bit for bit dotAVX2 with the decoded row.
TEXT ·dotQ8_0AVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nb+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
q80b2:
	VPMOVSXBD 2(SI), Y4
	VPMOVSXBD 10(SI), Y5
	VPMOVSXBD 18(SI), Y6
	VPMOVSXBD 26(SI), Y7
	BLOCK32_FMA_Y4_Y7
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  q80b2
	SUM_Y0_Y3
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotQ5_0AVX2(x *float32, src *byte, nb int) float32
// dotQ5_0AVX512 with AVX2, accumulated as dotQ8_0AVX2: value i's fifth bit is bit i of
// qh shifted into place per lane (VPSRLVD by i, masked, shifted left 4).
TEXT ·dotQ5_0AVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nb+16(FP), CX
	VPBROADCASTD nibconst<>+0(SB), Y14   // 15
	VPSRLD $3, Y14, Y13                  // 1
	VPSLLD $4, Y13, Y12                  // 16
	VMOVDQU q5shift<>+0(SB), Y11         // 0…7
	VPSLLD $3, Y13, Y10                  // 8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
q50b2:
	VPBROADCASTD 2(SI), Y9               // qh
	VPMOVZXBD 6(SI), Y4                  // qs[0:8]
	VPMOVZXBD 14(SI), Y5                 // qs[8:16]
	VPSRLD $4, Y4, Y6                    // values 16–23
	VPSRLD $4, Y5, Y7                    // 24–31
	VPAND Y14, Y4, Y4                    // 0–7
	VPAND Y14, Y5, Y5                    // 8–15
	VPSRLVD Y11, Y9, Y8                  // bits 0–7
	VPAND Y13, Y8, Y8
	VPSLLD $4, Y8, Y8
	VPOR Y8, Y4, Y4
	VPSRLD $8, Y9, Y9
	VPSRLVD Y11, Y9, Y8                  // bits 8–15
	VPAND Y13, Y8, Y8
	VPSLLD $4, Y8, Y8
	VPOR Y8, Y5, Y5
	VPSRLD $8, Y9, Y9
	VPSRLVD Y11, Y9, Y8                  // bits 16–23
	VPAND Y13, Y8, Y8
	VPSLLD $4, Y8, Y8
	VPOR Y8, Y6, Y6
	VPSRLD $8, Y9, Y9
	VPSRLVD Y11, Y9, Y8                  // bits 24–31
	VPAND Y13, Y8, Y8
	VPSLLD $4, Y8, Y8
	VPOR Y8, Y7, Y7
	VPSUBD Y12, Y4, Y4                   // q − 16
	VPSUBD Y12, Y5, Y5
	VPSUBD Y12, Y6, Y6
	VPSUBD Y12, Y7, Y7
	BLOCK32_FMA_Y4_Y7
	ADDQ $22, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  q50b2
	SUM_Y0_Y3
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// The group pairs each VPDPBUSD of dotQ4KVNNI sums, as VPERMPS indices into the
// block's eight scales: lanes 0–7 one group's, 8–15 the other's (groups 0 and 2, 1
// and 3, 4 and 6, 5 and 7).
DATA q4kpairs<>+0(SB)/4, $0
DATA q4kpairs<>+4(SB)/4, $0
DATA q4kpairs<>+8(SB)/4, $0
DATA q4kpairs<>+12(SB)/4, $0
DATA q4kpairs<>+16(SB)/4, $0
DATA q4kpairs<>+20(SB)/4, $0
DATA q4kpairs<>+24(SB)/4, $0
DATA q4kpairs<>+28(SB)/4, $0
DATA q4kpairs<>+32(SB)/4, $2
DATA q4kpairs<>+36(SB)/4, $2
DATA q4kpairs<>+40(SB)/4, $2
DATA q4kpairs<>+44(SB)/4, $2
DATA q4kpairs<>+48(SB)/4, $2
DATA q4kpairs<>+52(SB)/4, $2
DATA q4kpairs<>+56(SB)/4, $2
DATA q4kpairs<>+60(SB)/4, $2
DATA q4kpairs<>+64(SB)/4, $1
DATA q4kpairs<>+68(SB)/4, $1
DATA q4kpairs<>+72(SB)/4, $1
DATA q4kpairs<>+76(SB)/4, $1
DATA q4kpairs<>+80(SB)/4, $1
DATA q4kpairs<>+84(SB)/4, $1
DATA q4kpairs<>+88(SB)/4, $1
DATA q4kpairs<>+92(SB)/4, $1
DATA q4kpairs<>+96(SB)/4, $3
DATA q4kpairs<>+100(SB)/4, $3
DATA q4kpairs<>+104(SB)/4, $3
DATA q4kpairs<>+108(SB)/4, $3
DATA q4kpairs<>+112(SB)/4, $3
DATA q4kpairs<>+116(SB)/4, $3
DATA q4kpairs<>+120(SB)/4, $3
DATA q4kpairs<>+124(SB)/4, $3
DATA q4kpairs<>+128(SB)/4, $4
DATA q4kpairs<>+132(SB)/4, $4
DATA q4kpairs<>+136(SB)/4, $4
DATA q4kpairs<>+140(SB)/4, $4
DATA q4kpairs<>+144(SB)/4, $4
DATA q4kpairs<>+148(SB)/4, $4
DATA q4kpairs<>+152(SB)/4, $4
DATA q4kpairs<>+156(SB)/4, $4
DATA q4kpairs<>+160(SB)/4, $6
DATA q4kpairs<>+164(SB)/4, $6
DATA q4kpairs<>+168(SB)/4, $6
DATA q4kpairs<>+172(SB)/4, $6
DATA q4kpairs<>+176(SB)/4, $6
DATA q4kpairs<>+180(SB)/4, $6
DATA q4kpairs<>+184(SB)/4, $6
DATA q4kpairs<>+188(SB)/4, $6
DATA q4kpairs<>+192(SB)/4, $5
DATA q4kpairs<>+196(SB)/4, $5
DATA q4kpairs<>+200(SB)/4, $5
DATA q4kpairs<>+204(SB)/4, $5
DATA q4kpairs<>+208(SB)/4, $5
DATA q4kpairs<>+212(SB)/4, $5
DATA q4kpairs<>+216(SB)/4, $5
DATA q4kpairs<>+220(SB)/4, $5
DATA q4kpairs<>+224(SB)/4, $7
DATA q4kpairs<>+228(SB)/4, $7
DATA q4kpairs<>+232(SB)/4, $7
DATA q4kpairs<>+236(SB)/4, $7
DATA q4kpairs<>+240(SB)/4, $7
DATA q4kpairs<>+244(SB)/4, $7
DATA q4kpairs<>+248(SB)/4, $7
DATA q4kpairs<>+252(SB)/4, $7
GLOBL q4kpairs<>(SB), RODATA|NOPTR, $256

// func dotQ4KVNNI(xq *int8, xs *float32, src *byte, nb int) float32
// Σ decoded value · x over nb (> 0) Q4_K blocks, x quantized to int8 in groups of
// 32 (q4kIntX): xq per block the groups' codes in the order of the block's code bytes
// (groups 0 and 2, then 1 and 3, 4 and 6, 5 and 7: a 64-byte load's low nibbles, then
// its high ones), xs per block the eight groups' scales, then their sums Σx.
// Each group's 32 code · code products summed exactly in int32 (VPDPBUSD: the
// nibbles unsigned, x's codes signed; lanes 0–7 one group's, 8–15 the other's),
// widened and scaled by d·sc_j·xs_j (Q4K_SCALES times the x scales, spread over the
// lanes with VPERMPS), and the minimums' (−dmin)·m_j·Σx_j added in Y20.
TEXT ·dotQ4KVNNI(SB), NOSPLIT, $0-36
	MOVQ xq+0(FP), DI
	MOVQ xs+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ nb+24(FP), CX
	VMOVDQU32 q4kpairs<>+0(SB), Z24
	VMOVDQU32 q4kpairs<>+64(SB), Z25
	VMOVDQU32 q4kpairs<>+128(SB), Z26
	VMOVDQU32 q4kpairs<>+192(SB), Z27
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z28
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z20, Z20, Z20
	MOVL $0x80000000, AX
	VPBROADCASTD AX, Y15             // the sign bit
q4kvnniblock:
	Q4K_SCALES
	VMULPS 0(R10), Y7, Y7            // d·sc_j·xs_j
	VFMADD231PS 32(R10), Y8, Y20     // (−dmin·m_j)·Σx_j
	VMOVDQU64 16(SI), Z13            // code bytes 0–63: groups 0 and 2 low, 1 and 3 high
	VMOVDQU64 80(SI), Z14            // 64–127: groups 4 and 6, 5 and 7
	VPSRLW $4, Z13, Z16
	VPSRLW $4, Z14, Z17
	VPANDD Z28, Z13, Z13
	VPANDD Z28, Z14, Z14
	VPANDD Z28, Z16, Z16
	VPANDD Z28, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPDPBUSD 0(DI), Z13, Z18
	VPDPBUSD 64(DI), Z16, Z19
	VPDPBUSD 128(DI), Z14, Z21
	VPDPBUSD 192(DI), Z17, Z22
	VPERMPS Z7, Z24, Z9              // [F0 ×8, F2 ×8]
	VPERMPS Z7, Z25, Z10             // [F1, F3]
	VPERMPS Z7, Z26, Z11             // [F4, F6]
	VPERMPS Z7, Z27, Z12             // [F5, F7]
	VCVTDQ2PS Z18, Z18
	VCVTDQ2PS Z19, Z19
	VCVTDQ2PS Z21, Z21
	VCVTDQ2PS Z22, Z22
	VFMADD231PS Z9, Z18, Z0
	VFMADD231PS Z10, Z19, Z1
	VFMADD231PS Z11, Z21, Z2
	VFMADD231PS Z12, Z22, Z3
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $64, R10
	DECQ CX
	JNZ  q4kvnniblock
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z2, Z0, Z0
	VADDPS Z20, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	SUM_Y0(X1)
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// KINT_CONSTS loads the constants every K type's integer dot uses — a code field's
// mask (Y12, mask in every dword), 16-bit ones (Y13) — and clears their sums (Y0, Y1)
// and offsets or minimums (Y9).
#define KINT_CONSTS(mask) \
	MOVL mask, AX; \
	VMOVD AX, X12; \
	VPBROADCASTD X12, Y12; \
	MOVL $0x00010001, AX; \
	VMOVD AX, X13; \
	VPBROADCASTD X13, Y13; \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y9, Y9, Y9

// K4INT_CONSTS loads the Q4_K and Q5_K integer dots' constants — KINT_CONSTS's with
// the nibble mask, and the sign bit (Y15).
#define K4INT_CONSTS \
	KINT_CONSTS($0x0f0f0f0f); \
	MOVL $0x80000000, AX; \
	VMOVD AX, X15; \
	VPBROADCASTD X15, Y15

// K4INT_SCALES decodes the block at SI's header (Q4K_SCALES) into its groups'
// d·sc_j·xs_j (on the stack, for K4INT_PAIR_DOT's broadcasts) and adds its minimums
// against x's group sums, (−dmin·m_j)·Σx_j, into Y9.
#define K4INT_SCALES \
	Q4K_SCALES; \
	VMULPS 0(R10), Y7, Y7; \
	VFMADD231PS 32(R10), Y8, Y9; \
	VMOVUPS Y7, 0(SP)

// K4INT_PAIR_DOT dots group pair DX/8's codes (Y10: group 2r, Y11: 2r+1) with x's 64
// at DI, each group's int32 sums scaled by its d·sc_j·xs_j into Y0 and Y1.
#define K4INT_PAIR_DOT \
	VPMADDUBSW 0(DI), Y10, Y10; \
	VPMADDUBSW 32(DI), Y11, Y11; \
	VPMADDWD Y13, Y10, Y10; \
	VPMADDWD Y13, Y11, Y11; \
	VCVTDQ2PS Y10, Y10; \
	VCVTDQ2PS Y11, Y11; \
	VBROADCASTSS 0(SP)(DX*1), Y14; \
	VFMADD231PS Y14, Y10, Y0; \
	VBROADCASTSS 4(SP)(DX*1), Y14; \
	VFMADD231PS Y14, Y11, Y1

// K4INT_END returns the sums' total.
#define K4INT_END \
	VADDPS Y1, Y0, Y0; \
	VADDPS Y9, Y0, Y0; \
	SUM_Y0(X1); \
	VMOVSS X0, ret+32(FP); \
	VZEROUPPER; \
	RET

// func dotQ4KIntAVX2(xq *int8, xs *float32, src *byte, nb int) float32
// dotQ4KVNNI with AVX2 (and F16C, for Q4K_SCALES): x's codes in the blocks' own order
// (q4kIntOrder), each group's 32 products summed exactly by VPMADDUBSW (pairs of
// nibble · code into 16-bit words: at most 2·15·127, no saturation) and VPMADDWD by
// ones (into eight int32 lanes), widened and scaled by d·sc_j·xs_j broadcast from the
// stack.
TEXT ·dotQ4KIntAVX2(SB), NOSPLIT, $32-36
	MOVQ xq+0(FP), DI
	MOVQ xs+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ nb+24(FP), CX
	K4INT_CONSTS
q4kint2block:
	K4INT_SCALES
	XORQ DX, DX                      // the group pair
q4kint2run:
	VMOVDQU 16(SI)(DX*4), Y10        // 32 code bytes: group 2r low, 2r+1 high
	VPSRLW $4, Y10, Y11
	VPAND Y12, Y10, Y10
	VPAND Y12, Y11, Y11
	K4INT_PAIR_DOT
	ADDQ $64, DI
	ADDQ $8, DX
	CMPQ DX, $32
	JNE  q4kint2run
	ADDQ $144, SI
	ADDQ $64, R10
	DECQ CX
	JNZ  q4kint2block
	K4INT_END

// VPERMPS indices spreading two blocks' scales over a zmm's halves (dotQ5_0VNNI).
DATA q50pair<>+0(SB)/4, $0
DATA q50pair<>+4(SB)/4, $0
DATA q50pair<>+8(SB)/4, $0
DATA q50pair<>+12(SB)/4, $0
DATA q50pair<>+16(SB)/4, $0
DATA q50pair<>+20(SB)/4, $0
DATA q50pair<>+24(SB)/4, $0
DATA q50pair<>+28(SB)/4, $0
DATA q50pair<>+32(SB)/4, $1
DATA q50pair<>+36(SB)/4, $1
DATA q50pair<>+40(SB)/4, $1
DATA q50pair<>+44(SB)/4, $1
DATA q50pair<>+48(SB)/4, $1
DATA q50pair<>+52(SB)/4, $1
DATA q50pair<>+56(SB)/4, $1
DATA q50pair<>+60(SB)/4, $1
GLOBL q50pair<>(SB), RODATA|NOPTR, $64

// func dotQ5_0VNNI(xq *int8, xs *float32, src *byte, nb int) float32
// Σ decoded value · x over nb (> 0) Q5_0 blocks of 22 bytes {fp16 d; u32 qh; u8
// qs[16]} (value d·(u − 16), u = the nibble with qh's bit above it), each d widened
// where it is (VCVTPH2PS), x quantized to int8 in groups of 32 in order (xq) with each group's
// scale and scale·Σcodes in xs (quantizeRow32's pairs):
// Σ d·(xs·Σ u·code − 16·xs·Σ code). Two blocks a step: their 32 codes each as
// [low nibbles, high nibbles] in one zmm (VSHUFI64X2), the fifth bits added under
// the two qh words as a 64-bit byte mask, 64 products summed exactly by one VPDPBUSD
// (lanes 0–7 the first block's, 8–15 the second's), widened and scaled by d·xs spread
// over the halves (VPERMPS); an odd last block in ymm registers.
TEXT ·dotQ5_0VNNI(SB), NOSPLIT, $0-36
	MOVQ xq+0(FP), DI
	MOVQ xs+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ nb+24(FP), CX
	VMOVDQU32 q50pair<>+0(SB), Z24
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z28
	MOVL $0x10101010, AX
	VPBROADCASTD AX, Z29
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VXORPS X3, X3, X3
	SHRQ $1, CX                      // pairs of blocks
	JZ   q50vnnitail
q50vnnipair:
	MOVWLZX 0(SI), AX                // d_a, d_b: the blocks' fp16 d, widened (exact)
	MOVWLZX 22(SI), BX
	SHLL $16, BX
	ORL  BX, AX
	VMOVD AX, X4
	VCVTPH2PS X4, X4
	VMOVSD 0(R10), X5                // xs_a, xs·Σ_a
	VMOVSD 8(R10), X6                // xs_b, xs·Σ_b
	VUNPCKLPS X6, X5, X7             // xs_a, xs_b, xs·Σ_a, xs·Σ_b
	VPERMILPS $0x4e, X7, X8          // xs·Σ_a, xs·Σ_b, …
	VFMADD231PS X8, X4, X3          // d·xs·Σcode, the minimums' part
	VMULPS X7, X4, X4                // d_a·xs_a, d_b·xs_b
	VPERMPS Z4, Z24, Z9
	VMOVDQU 6(SI), X10               // block a's nibbles
	VINSERTI128 $1, 28(SI), Y10, Y10 // block b's
	VPSRLW $4, Y10, Y11
	VPANDD Y28, Y10, Y10             // [a low, b low]
	VPANDD Y28, Y11, Y11             // [a high, b high]
	VINSERTI64X4 $1, Y11, Z10, Z10
	VSHUFI64X2 $0xd8, Z10, Z10, Z10  // [a low, a high, b low, b high]
	MOVL 2(SI), AX
	MOVL 24(SI), BX
	SHLQ $32, BX
	ORQ  BX, AX
	KMOVQ AX, K1
	VPADDB Z29, Z10, K1, Z10         // the fifth bits
	VPXORD Z12, Z12, Z12
	VPDPBUSD 0(DI), Z10, Z12
	VCVTDQ2PS Z12, Z12
	VFMADD231PS Z9, Z12, Z0
	ADDQ $44, SI
	ADDQ $64, DI
	ADDQ $16, R10
	DECQ CX
	JNZ  q50vnnipair
q50vnnitail:
	MOVQ nb+24(FP), CX
	ANDQ $1, CX
	JZ   q50vnnisum
	BLOCK_D(X4)                      // d
	VMOVSS 0(R10), X5                // xs
	VMOVSS 4(R10), X8                // xs·Σcode
	VFMADD231PS X8, X4, X3
	VMULSS X5, X4, X4
	VBROADCASTSS X4, Y9
	VMOVDQU 6(SI), X10
	VPSRLW $4, X10, X11
	VPANDD X28, X10, X10
	VPANDD X28, X11, X11
	VINSERTI128 $1, X11, Y10, Y10
	MOVL 2(SI), AX
	KMOVD AX, K1
	VPADDB Y29, Y10, K1, Y10
	VPXORD Y12, Y12, Y12
	VPDPBUSD 0(DI), Y10, Y12
	VCVTDQ2PS Y12, Y12
	VFMADD231PS Y9, Y12, Y1          // Y1: the upper half of Z1 stays zero
q50vnnisum:
	VADDPS Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	SUM_Y0(X1)
	VHADDPS X3, X3, X3            // the minimums' Σ d·xs·Σcode
	VHADDPS X3, X3, X3
	MOVL $0x41800000, AX             // 16
	VMOVD AX, X2
	VFNMADD231SS X2, X3, X0         // − 16·Σ
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// dotQ5_0IntAVX2's spreading of qh over 32 bytes: byte i takes qh's byte i/8 (VPSHUFB
// within each 16-byte lane of the broadcast word), then tests bit i mod 8.
DATA q50qh<>+0(SB)/1, $0
DATA q50qh<>+1(SB)/1, $0
DATA q50qh<>+2(SB)/1, $0
DATA q50qh<>+3(SB)/1, $0
DATA q50qh<>+4(SB)/1, $0
DATA q50qh<>+5(SB)/1, $0
DATA q50qh<>+6(SB)/1, $0
DATA q50qh<>+7(SB)/1, $0
DATA q50qh<>+8(SB)/1, $1
DATA q50qh<>+9(SB)/1, $1
DATA q50qh<>+10(SB)/1, $1
DATA q50qh<>+11(SB)/1, $1
DATA q50qh<>+12(SB)/1, $1
DATA q50qh<>+13(SB)/1, $1
DATA q50qh<>+14(SB)/1, $1
DATA q50qh<>+15(SB)/1, $1
DATA q50qh<>+16(SB)/1, $2
DATA q50qh<>+17(SB)/1, $2
DATA q50qh<>+18(SB)/1, $2
DATA q50qh<>+19(SB)/1, $2
DATA q50qh<>+20(SB)/1, $2
DATA q50qh<>+21(SB)/1, $2
DATA q50qh<>+22(SB)/1, $2
DATA q50qh<>+23(SB)/1, $2
DATA q50qh<>+24(SB)/1, $3
DATA q50qh<>+25(SB)/1, $3
DATA q50qh<>+26(SB)/1, $3
DATA q50qh<>+27(SB)/1, $3
DATA q50qh<>+28(SB)/1, $3
DATA q50qh<>+29(SB)/1, $3
DATA q50qh<>+30(SB)/1, $3
DATA q50qh<>+31(SB)/1, $3
DATA q50qh<>+32(SB)/1, $1
DATA q50qh<>+33(SB)/1, $2
DATA q50qh<>+34(SB)/1, $4
DATA q50qh<>+35(SB)/1, $8
DATA q50qh<>+36(SB)/1, $16
DATA q50qh<>+37(SB)/1, $32
DATA q50qh<>+38(SB)/1, $64
DATA q50qh<>+39(SB)/1, $128
DATA q50qh<>+40(SB)/1, $1
DATA q50qh<>+41(SB)/1, $2
DATA q50qh<>+42(SB)/1, $4
DATA q50qh<>+43(SB)/1, $8
DATA q50qh<>+44(SB)/1, $16
DATA q50qh<>+45(SB)/1, $32
DATA q50qh<>+46(SB)/1, $64
DATA q50qh<>+47(SB)/1, $128
DATA q50qh<>+48(SB)/1, $1
DATA q50qh<>+49(SB)/1, $2
DATA q50qh<>+50(SB)/1, $4
DATA q50qh<>+51(SB)/1, $8
DATA q50qh<>+52(SB)/1, $16
DATA q50qh<>+53(SB)/1, $32
DATA q50qh<>+54(SB)/1, $64
DATA q50qh<>+55(SB)/1, $128
DATA q50qh<>+56(SB)/1, $1
DATA q50qh<>+57(SB)/1, $2
DATA q50qh<>+58(SB)/1, $4
DATA q50qh<>+59(SB)/1, $8
DATA q50qh<>+60(SB)/1, $16
DATA q50qh<>+61(SB)/1, $32
DATA q50qh<>+62(SB)/1, $64
DATA q50qh<>+63(SB)/1, $128
GLOBL q50qh<>(SB), RODATA|NOPTR, $64

// NIBBLES32(off, mask) puts the 16 code bytes at off(SI) — a GGUF block's 32 4-bit
// codes — in Y10 as bytes [low nibbles, high nibbles] (values 0–15, then 16–31), the
// nibble mask in mask's X register. Clobbers X11.
#define NIBBLES32(off, mask) \
	VMOVDQU off(SI), X10; \
	VPSRLW $4, X10, X11; \
	VPAND mask, X10, X10; \
	VPAND mask, X11, X11; \
	VINSERTI128 $1, X11, Y10, Y10

// BLOCK32_INT_SCALE and BLOCK32_INT_DOT(ones) are a step of the printer's integer dots
// over GGUF blocks of 32 with one fp16 d (dotQ5_0IntAVX2, dotQ4_0IntAVX2), x
// quantized by quantizeRow32 (its codes at DI, its pairs at R10): the block's d·xs in
// Y5 and d·xs·Σcode added into X3 (the offsets' part), then its 32 codes in Y10 times
// x's, summed exactly by VPMADDUBSW (pairs of at most 2·31·127) and VPMADDWD by the
// 16-bit ones, widened and added into Y0 times d·xs. BLOCK32_INT_END(off) takes the
// codes' offset back, −off·Σ d·xs·Σcode (off as float32 bits), and returns the sum.
#define BLOCK32_INT_SCALE \
	BLOCK_D(X4); \
	VMULSS 0(R10), X4, X5; \
	VFMADD231SS 4(R10), X4, X3; \
	VBROADCASTSS X5, Y5

#define BLOCK32_INT_DOT(ones) \
	VPMADDUBSW 0(DI), Y10, Y10; \
	VPMADDWD ones, Y10, Y10; \
	VCVTDQ2PS Y10, Y10; \
	VFMADD231PS Y5, Y10, Y0

#define BLOCK32_INT_END(off) \
	SUM_Y0(X1); \
	MOVL off, AX; \
	VMOVD AX, X2; \
	VFNMADD231SS X2, X3, X0; \
	VMOVSS X0, ret+32(FP); \
	VZEROUPPER; \
	RET

// Q50_CODES_CONSTS loads Q5_CODES_AVX2's constants: the nibble mask (Y12), qh's
// spreading (Y13: byte i takes qh's byte i/8; Y14: bit i mod 8) and the fifth bit (Y15).
// Clobbers AX.
#define Q50_CODES_CONSTS \
	VPBROADCASTB nibconst<>+0(SB), Y12; \
	VMOVDQU q50qh<>+0(SB), Y13; \
	VMOVDQU q50qh<>+32(SB), Y14; \
	MOVL $0x10101010, AX; \
	VMOVD AX, X15; \
	VPBROADCASTD X15, Y15

// Q5_CODES_AVX2 makes the 32 5-bit codes of the Q5_0 or Q5_1 block at SI in Y10 —
// its nibbles at qs(SI) [low ones, high ones], each with bit i of the word at qh(SI)
// above it (spread with VPSHUFB, a bit test and VPCMPEQB) — for dotQ5_0IntAVX2,
// dotQ5_1IntAVX2 and codesQ5_0AVX2. Clobbers X11, Y6.
#define Q5_CODES_AVX2(qs, qh) \
	NIBBLES32(qs, X12); \
	VPBROADCASTD qh(SI), Y6; \
	VPSHUFB Y13, Y6, Y6; \
	VPAND Y14, Y6, Y6; \
	VPCMPEQB Y14, Y6, Y6; \
	VPAND Y15, Y6, Y6; \
	VPOR Y6, Y10, Y10

// func dotQ5_0IntAVX2(xq *int8, xs *float32, src *byte, nb int) float32
// dotQ5_0VNNI's sum with AVX2, a block a step: its 32 codes [low nibbles, high
// nibbles], the fifth bits spread from qh (VPSHUFB, a bit test, VPCMPEQB), each pair
// of code · code products summed by VPMADDUBSW (at most 2·31·127: no saturation)
// and the pairs by VPMADDWD by ones, widened and scaled by d·xs.
TEXT ·dotQ5_0IntAVX2(SB), NOSPLIT, $0-36
	MOVQ xq+0(FP), DI
	MOVQ xs+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ nb+24(FP), CX
	Q50_CODES_CONSTS
	MOVL $0x00010001, AX
	VMOVD AX, X9
	VPBROADCASTD X9, Y9              // 16-bit ones
	VXORPS Y0, Y0, Y0
	VXORPS X3, X3, X3
q50int2block:
	BLOCK32_INT_SCALE
	Q5_CODES_AVX2(6, 2)
	BLOCK32_INT_DOT(Y9)
	ADDQ $22, SI
	ADDQ $32, DI
	ADDQ $8, R10
	DECQ CX
	JNZ  q50int2block
	BLOCK32_INT_END($0x41800000)     // 16

// func q4kHeadersAVX2(s, mn *float32, src *byte, nb int)
// The scales d·sc_j and minimums (−dmin)·m_j of nb (> 0) Q4_K blocks, eight each a
// block, into s and mn (Q4K_SCALES: AVX2 and F16C), for the canvas product's packing
// (rowCodesQ4K): the decoder's values, one rounding each.
TEXT ·q4kHeadersAVX2(SB), NOSPLIT, $0-32
	MOVQ s+0(FP), DI
	MOVQ mn+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ nb+24(FP), CX
	MOVL $0x80000000, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15            // the sign bit
q4kheaders:
	Q4K_SCALES
	VMOVUPS Y7, (DI)
	VMOVUPS Y8, (R10)
	ADDQ $144, SI
	ADDQ $32, DI
	ADDQ $32, R10
	DECQ CX
	JNZ  q4kheaders
	VZEROUPPER
	RET

// func codesQ8_0AVX2(dst *byte, s, mn *float32, src *byte, nb int)
// The canvas packing's row of nb (> 0) Q8_0 blocks {fp16 d; int8 q[32]}: each code
// + 128 as an unsigned byte into dst, d widened (F16C) into s and −128·d into mn
// (rowCodes32's values).
TEXT ·codesQ8_0AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ s+8(FP), R10
	MOVQ mn+16(FP), R11
	MOVQ src+24(FP), SI
	MOVQ nb+32(FP), CX
	MOVL $0x80808080, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15            // + 128: the sign bit flipped
	MOVL $0xc3000000, AX             // −128
	VMOVD AX, X14
q80codes:
	BLOCK_D(X0)
	VMULSS X14, X0, X1
	VMOVSS X0, (R10)
	VMOVSS X1, (R11)
	VMOVDQU 2(SI), Y2
	VPXOR Y15, Y2, Y2
	VMOVDQU Y2, (DI)
	ADDQ $34, SI
	ADDQ $32, DI
	ADDQ $4, R10
	ADDQ $4, R11
	DECQ CX
	JNZ  q80codes
	VZEROUPPER
	RET

// func codesQ5_0AVX2(dst *byte, s, mn *float32, src *byte, nb int)
// The same for Q5_0 blocks {fp16 d; u32 qh; u8 qs[16]}: each value's 5-bit code (its
// nibble, low nibbles first, with qh's bit above it, spread as dotQ5_0IntAVX2 spreads
// it) into dst, d into s and −16·d into mn.
TEXT ·codesQ5_0AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ s+8(FP), R10
	MOVQ mn+16(FP), R11
	MOVQ src+24(FP), SI
	MOVQ nb+32(FP), CX
	Q50_CODES_CONSTS
	MOVL $0xc1800000, AX             // −16
	VMOVD AX, X9
q50codes:
	BLOCK_D(X0)
	VMULSS X9, X0, X1
	VMOVSS X0, (R10)
	VMOVSS X1, (R11)
	Q5_CODES_AVX2(6, 2)
	VMOVDQU Y10, (DI)
	ADDQ $22, SI
	ADDQ $32, DI
	ADDQ $4, R10
	ADDQ $4, R11
	DECQ CX
	JNZ  q50codes
	VZEROUPPER
	RET

// VPERMPS indices for dotNVFP4VNNI: for step s of four, lane j (j mod 8 = i: the
// code bytes' low nibbles in lanes 0–7, values 8i, 8i+2, 8i+4, 8i+6; their high ones
// in lanes 8–15, the odd values after them) takes the scale of block 4s + i/2 of
// sixteen (nvfp4h4) and the x scale at element 4s + 2·(i/4) of eight pairs
// (nvfp4x4); a lone step uses step 0's.
DATA nvfp4h4<>+0(SB)/4, $0
DATA nvfp4h4<>+4(SB)/4, $0
DATA nvfp4h4<>+8(SB)/4, $1
DATA nvfp4h4<>+12(SB)/4, $1
DATA nvfp4h4<>+16(SB)/4, $2
DATA nvfp4h4<>+20(SB)/4, $2
DATA nvfp4h4<>+24(SB)/4, $3
DATA nvfp4h4<>+28(SB)/4, $3
DATA nvfp4h4<>+32(SB)/4, $0
DATA nvfp4h4<>+36(SB)/4, $0
DATA nvfp4h4<>+40(SB)/4, $1
DATA nvfp4h4<>+44(SB)/4, $1
DATA nvfp4h4<>+48(SB)/4, $2
DATA nvfp4h4<>+52(SB)/4, $2
DATA nvfp4h4<>+56(SB)/4, $3
DATA nvfp4h4<>+60(SB)/4, $3
DATA nvfp4h4<>+64(SB)/4, $4
DATA nvfp4h4<>+68(SB)/4, $4
DATA nvfp4h4<>+72(SB)/4, $5
DATA nvfp4h4<>+76(SB)/4, $5
DATA nvfp4h4<>+80(SB)/4, $6
DATA nvfp4h4<>+84(SB)/4, $6
DATA nvfp4h4<>+88(SB)/4, $7
DATA nvfp4h4<>+92(SB)/4, $7
DATA nvfp4h4<>+96(SB)/4, $4
DATA nvfp4h4<>+100(SB)/4, $4
DATA nvfp4h4<>+104(SB)/4, $5
DATA nvfp4h4<>+108(SB)/4, $5
DATA nvfp4h4<>+112(SB)/4, $6
DATA nvfp4h4<>+116(SB)/4, $6
DATA nvfp4h4<>+120(SB)/4, $7
DATA nvfp4h4<>+124(SB)/4, $7
DATA nvfp4h4<>+128(SB)/4, $8
DATA nvfp4h4<>+132(SB)/4, $8
DATA nvfp4h4<>+136(SB)/4, $9
DATA nvfp4h4<>+140(SB)/4, $9
DATA nvfp4h4<>+144(SB)/4, $10
DATA nvfp4h4<>+148(SB)/4, $10
DATA nvfp4h4<>+152(SB)/4, $11
DATA nvfp4h4<>+156(SB)/4, $11
DATA nvfp4h4<>+160(SB)/4, $8
DATA nvfp4h4<>+164(SB)/4, $8
DATA nvfp4h4<>+168(SB)/4, $9
DATA nvfp4h4<>+172(SB)/4, $9
DATA nvfp4h4<>+176(SB)/4, $10
DATA nvfp4h4<>+180(SB)/4, $10
DATA nvfp4h4<>+184(SB)/4, $11
DATA nvfp4h4<>+188(SB)/4, $11
DATA nvfp4h4<>+192(SB)/4, $12
DATA nvfp4h4<>+196(SB)/4, $12
DATA nvfp4h4<>+200(SB)/4, $13
DATA nvfp4h4<>+204(SB)/4, $13
DATA nvfp4h4<>+208(SB)/4, $14
DATA nvfp4h4<>+212(SB)/4, $14
DATA nvfp4h4<>+216(SB)/4, $15
DATA nvfp4h4<>+220(SB)/4, $15
DATA nvfp4h4<>+224(SB)/4, $12
DATA nvfp4h4<>+228(SB)/4, $12
DATA nvfp4h4<>+232(SB)/4, $13
DATA nvfp4h4<>+236(SB)/4, $13
DATA nvfp4h4<>+240(SB)/4, $14
DATA nvfp4h4<>+244(SB)/4, $14
DATA nvfp4h4<>+248(SB)/4, $15
DATA nvfp4h4<>+252(SB)/4, $15
GLOBL nvfp4h4<>(SB), RODATA|NOPTR, $256
DATA nvfp4x4<>+0(SB)/4, $0
DATA nvfp4x4<>+4(SB)/4, $0
DATA nvfp4x4<>+8(SB)/4, $0
DATA nvfp4x4<>+12(SB)/4, $0
DATA nvfp4x4<>+16(SB)/4, $2
DATA nvfp4x4<>+20(SB)/4, $2
DATA nvfp4x4<>+24(SB)/4, $2
DATA nvfp4x4<>+28(SB)/4, $2
DATA nvfp4x4<>+32(SB)/4, $0
DATA nvfp4x4<>+36(SB)/4, $0
DATA nvfp4x4<>+40(SB)/4, $0
DATA nvfp4x4<>+44(SB)/4, $0
DATA nvfp4x4<>+48(SB)/4, $2
DATA nvfp4x4<>+52(SB)/4, $2
DATA nvfp4x4<>+56(SB)/4, $2
DATA nvfp4x4<>+60(SB)/4, $2
DATA nvfp4x4<>+64(SB)/4, $4
DATA nvfp4x4<>+68(SB)/4, $4
DATA nvfp4x4<>+72(SB)/4, $4
DATA nvfp4x4<>+76(SB)/4, $4
DATA nvfp4x4<>+80(SB)/4, $6
DATA nvfp4x4<>+84(SB)/4, $6
DATA nvfp4x4<>+88(SB)/4, $6
DATA nvfp4x4<>+92(SB)/4, $6
DATA nvfp4x4<>+96(SB)/4, $4
DATA nvfp4x4<>+100(SB)/4, $4
DATA nvfp4x4<>+104(SB)/4, $4
DATA nvfp4x4<>+108(SB)/4, $4
DATA nvfp4x4<>+112(SB)/4, $6
DATA nvfp4x4<>+116(SB)/4, $6
DATA nvfp4x4<>+120(SB)/4, $6
DATA nvfp4x4<>+124(SB)/4, $6
DATA nvfp4x4<>+128(SB)/4, $8
DATA nvfp4x4<>+132(SB)/4, $8
DATA nvfp4x4<>+136(SB)/4, $8
DATA nvfp4x4<>+140(SB)/4, $8
DATA nvfp4x4<>+144(SB)/4, $10
DATA nvfp4x4<>+148(SB)/4, $10
DATA nvfp4x4<>+152(SB)/4, $10
DATA nvfp4x4<>+156(SB)/4, $10
DATA nvfp4x4<>+160(SB)/4, $8
DATA nvfp4x4<>+164(SB)/4, $8
DATA nvfp4x4<>+168(SB)/4, $8
DATA nvfp4x4<>+172(SB)/4, $8
DATA nvfp4x4<>+176(SB)/4, $10
DATA nvfp4x4<>+180(SB)/4, $10
DATA nvfp4x4<>+184(SB)/4, $10
DATA nvfp4x4<>+188(SB)/4, $10
DATA nvfp4x4<>+192(SB)/4, $12
DATA nvfp4x4<>+196(SB)/4, $12
DATA nvfp4x4<>+200(SB)/4, $12
DATA nvfp4x4<>+204(SB)/4, $12
DATA nvfp4x4<>+208(SB)/4, $14
DATA nvfp4x4<>+212(SB)/4, $14
DATA nvfp4x4<>+216(SB)/4, $14
DATA nvfp4x4<>+220(SB)/4, $14
DATA nvfp4x4<>+224(SB)/4, $12
DATA nvfp4x4<>+228(SB)/4, $12
DATA nvfp4x4<>+232(SB)/4, $12
DATA nvfp4x4<>+236(SB)/4, $12
DATA nvfp4x4<>+240(SB)/4, $14
DATA nvfp4x4<>+244(SB)/4, $14
DATA nvfp4x4<>+248(SB)/4, $14
DATA nvfp4x4<>+252(SB)/4, $14
GLOBL nvfp4x4<>(SB), RODATA|NOPTR, $256

// NVFP4_SCALES decodes the FP8 E4M3 scale codes in Z5's lanes (zero-extended bytes)
// into the halved block scales h = fp8·hs2 (Z29): the code's exponent and mantissa
// moved into a float32's, rebiased; a subnormal as e = 1 less 2^-6; the sign. Lanes
// whose code is 0 give 0. Clobbers Z6, Z7, K1.
#define NVFP4_SCALES \
	VPANDD Z20, Z5, Z6; \
	VPSLLD $20, Z6, Z6; \
	VPADDD Z22, Z6, Z6; \
	VPTESTNMD Z21, Z5, K1; \
	VPADDD Z23, Z6, K1, Z6; \
	VSUBPS Z26, Z6, K1, Z6; \
	VPANDD Z30, Z5, Z7; \
	VPSLLD $24, Z7, Z7; \
	VPORD Z7, Z6, Z6; \
	VMULPS Z29, Z6, Z5

// NVFP4_STEP is one step of 64 values of dotNVFP4VNNI's four-step loop: the lane
// scales h·xs spread from Z5 and Z8 by the index tables idxh and idxx, the 32 code
// bytes at codes(SI) — their low nibbles, then their high ones — and the x codes at
// xq(DI), in that order (nibbleOrderX).
#define NVFP4_STEP(codes, xq, idxh, idxx) \
	VPERMPS Z5, idxh, Z7; \
	VPERMPS Z8, idxx, Z9; \
	VMULPS Z9, Z7, Z7; \
	VMOVDQU codes(SI), Y10; \
	VPSRLW $4, Y10, Y11; \
	VPANDD Y28, Y10, Y10; \
	VPANDD Y28, Y11, Y11; \
	VINSERTI64X4 $1, Y11, Z10, Z12; \
	VPSHUFB Z12, Z27, Z12; \
	VPXORD Z14, Z14, Z14; \
	VPDPBUSD xq(DI), Z12, Z14; \
	VCVTDQ2PS Z14, Z14; \
	VFMADD231PS Z7, Z14, Z0

// func dotNVFP4VNNI(xq *int8, xs *float32, xsum *float32, codes *byte, fp8 *byte, hs2 float32, nb int) float32
// Σ value · x over nb (> 0) steps of 64 NVFP4 values (32 code bytes, low nibble
// first; four blocks of 16, their FP8 E4M3 scale codes in fp8, scale_2 halved in
// hs2), x quantized to int8 in groups of 32 (xq, in nibbleOrderX's order) with
// quantizeRow32's pairs in xs and each block's xs·Σcode in xsum: Σ h·xs·Σ (2·e2m1 +
// 12)·code −
// 12·Σ h·xsum, h = fp8·hs2. Four steps at a time, their sixteen scale codes
// decoded in registers at once (NVFP4_SCALES), then a lone step at a time for the
// rest; each step (NVFP4_STEP) splits its 32 code bytes into nibbles, the low ones
// (the even values) then the high ones (the odd), in which order x's codes come
// (nibbleOrderX: taken so, the nibbles need no interleaving back), looks them up as
// 2·e2m1 + 12 (VPSHUFB: unsigned for VPDPBUSD), sums 64 products exactly by one
// VPDPBUSD (each lane's four of one block), widened and scaled by h·xs spread over
// the lanes (VPERMPS).
TEXT ·dotNVFP4VNNI(SB), NOSPLIT, $0-60
	MOVQ xq+0(FP), DI
	MOVQ xs+8(FP), R10
	MOVQ xsum+16(FP), R9
	MOVQ codes+24(FP), SI
	MOVQ fp8+32(FP), R8
	VBROADCASTSS hs2+40(FP), Z29
	MOVQ nb+48(FP), CX
	VMOVDQU32 nvfp4h4<>+0(SB), Z15
	VMOVDQU32 nvfp4x4<>+0(SB), Z19
	VBROADCASTI32X4 ·nvfp4Codes(SB), Z27
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Y28
	MOVL $0x7f, AX
	VPBROADCASTD AX, Z20
	MOVL $0x78, AX
	VPBROADCASTD AX, Z21
	MOVL $0x3c000000, AX             // 120 << 23: E4M3's exponent bias 7 as float32's 127
	VPBROADCASTD AX, Z22
	MOVL $0x00800000, AX             // 1 << 23
	VPBROADCASTD AX, Z23
	MOVL $0x3c800000, AX             // 2^-6
	VPBROADCASTD AX, Z26
	MOVL $0x80, AX
	VPBROADCASTD AX, Z30
	VPXORD Z0, Z0, Z0
	VXORPS X3, X3, X3
	MOVQ CX, BX
	SHRQ $2, BX                      // four steps at a time: sixteen blocks' scales decoded at once
	JZ   nvfp4tail
	VMOVDQU32 nvfp4h4<>+64(SB), Z16
	VMOVDQU32 nvfp4h4<>+128(SB), Z17
	VMOVDQU32 nvfp4h4<>+192(SB), Z18
	VMOVDQU32 nvfp4x4<>+64(SB), Z31
	VMOVDQU32 nvfp4x4<>+128(SB), Z1
	VMOVDQU32 nvfp4x4<>+192(SB), Z2
nvfp4quad:
	VPMOVZXBD 0(R8), Z5              // sixteen blocks' scale codes
	NVFP4_SCALES                     // h
	VMOVUPS 0(R9), Z6                // their xs·Σcode
	VFMADD231PS Z6, Z5, Z3           // Σ h·xsum, by lanes
	VMOVUPS 0(R10), Z8               // eight groups' xs, ·
	NVFP4_STEP(0, 0, Z15, Z19)
	NVFP4_STEP(32, 64, Z16, Z31)
	NVFP4_STEP(64, 128, Z17, Z1)
	NVFP4_STEP(96, 192, Z18, Z2)
	ADDQ $128, SI
	ADDQ $256, DI
	ADDQ $16, R8
	ADDQ $64, R9
	ADDQ $64, R10
	DECQ BX
	JNZ  nvfp4quad
nvfp4tail:
	ANDQ $3, CX
	JZ   nvfp4sum
nvfp4step:
	VPMOVZXBD 0(R8), X5              // four blocks' scale codes (the lanes above them zero, so their h too)
	NVFP4_SCALES
	VMOVUPS 0(R9), X6
	VFMADD231PS Z6, Z5, Z3
	VMOVUPS 0(R10), X8               // xs_a, ·, xs_b, ·
	NVFP4_STEP(0, 0, Z15, Z19)
	ADDQ $32, SI
	ADDQ $64, DI
	ADDQ $4, R8
	ADDQ $16, R9
	ADDQ $16, R10
	DECQ CX
	JNZ  nvfp4step
nvfp4sum:
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	SUM_Y0(X1)
	VEXTRACTF64X4 $1, Z3, Y4         // Σ h·xsum's lanes
	VADDPS Y4, Y3, Y3
	VEXTRACTF128 $1, Y3, X4
	VADDPS X4, X3, X3
	VHADDPS X3, X3, X3
	VHADDPS X3, X3, X3
	MOVL $0x41400000, AX             // 12
	VMOVD AX, X2
	VFNMADD231SS X2, X3, X0          // − 12·Σ h·xsum
	VMOVSS X0, ret+56(FP)
	VZEROUPPER
	RET

// nvfp4Spread are dotNVFP4IntAVX2's VPERMPS indices: a pair of steps' eight block
// scales spread over each step's eight sums — sum i holds the step's values 8i … 8i+7
// (its even ones by the low nibbles, its odd ones by the high), all of block i/2 —
// from lanes 0–3 (the first step) or 4–7 (the second).
DATA nvfp4Spread<>+0(SB)/4, $0
DATA nvfp4Spread<>+4(SB)/4, $0
DATA nvfp4Spread<>+8(SB)/4, $1
DATA nvfp4Spread<>+12(SB)/4, $1
DATA nvfp4Spread<>+16(SB)/4, $2
DATA nvfp4Spread<>+20(SB)/4, $2
DATA nvfp4Spread<>+24(SB)/4, $3
DATA nvfp4Spread<>+28(SB)/4, $3
DATA nvfp4Spread<>+32(SB)/4, $4
DATA nvfp4Spread<>+36(SB)/4, $4
DATA nvfp4Spread<>+40(SB)/4, $5
DATA nvfp4Spread<>+44(SB)/4, $5
DATA nvfp4Spread<>+48(SB)/4, $6
DATA nvfp4Spread<>+52(SB)/4, $6
DATA nvfp4Spread<>+56(SB)/4, $7
DATA nvfp4Spread<>+60(SB)/4, $7
GLOBL nvfp4Spread<>(SB), RODATA|NOPTR, $64

// NIBBLE_CONSTS sets the constants of the AVX2 printer dots that split code bytes
// into nibbles and sum VPMADDUBSW's words (dotNVFP4IntAVX2, dotInt4IntAVX2): Y15 the
// low nibbles' mask, Y13 16-bit ones. Clobbers AX.
#define NIBBLE_CONSTS \
	MOVL $0x0f0f0f0f, AX; \
	VMOVD AX, X15; \
	VPBROADCASTD X15, Y15; \
	MOVL $0x00010001, AX; \
	VMOVD AX, X13; \
	VPBROADCASTD X13, Y13

// NVFP4_AVX2_STEP is dotNVFP4IntAVX2's step of 64 values: the 32 code bytes at
// codes(SI) split into their low nibbles (the even values) and their high ones (the
// odd), each mapped through nvfp4Codes (qgemm.go) to 12 + 2·value and multiplied by
// the 32 x codes at xlo(DI) or xhi(DI) (nibbleOrderX's order) in pairs (VPMADDUBSW:
// a word's two products of at most 24·127 each, the two halves' words added, stay
// below 2¹⁵), summed in eights by VPMADDWD, converted and added into Y0 times their
// block's scale, spread from Y3 by the indices idx.
#define NVFP4_AVX2_STEP(codes, xlo, xhi, idx) \
	VMOVDQU codes(SI), Y2; \
	VPSRLW $4, Y2, Y9; \
	VPAND Y15, Y2, Y2; \
	VPAND Y15, Y9, Y9; \
	VPSHUFB Y2, Y14, Y2; \
	VPSHUFB Y9, Y14, Y9; \
	VPMADDUBSW xlo(DI), Y2, Y2; \
	VPMADDUBSW xhi(DI), Y9, Y9; \
	VPADDW Y9, Y2, Y2; \
	VPMADDWD Y13, Y2, Y2; \
	VCVTDQ2PS Y2, Y2; \
	VPERMPS Y3, idx, Y4; \
	VFMADD231PS Y4, Y2, Y0

// NVFP4_AVX2_SCALES decodes the FP8 block scale codes widened to dwords in reg2 (X2
// or Y2) exactly as float32 bits ((c & 0x7f) << 20, the sign at bit 31) times 2^120
// (E4M3's exponent bias 7 against float32's 127: a subnormal code comes out a float32
// subnormal, scaled exact), adds each times its block's xs·Σcode at (R9) into reg1 (the
// offsets' part), and leaves it times its x group's scale (quantizeRow32's pairs at
// (R10), each group's spread over its two blocks) in reg3.
#define NVFP4_AVX2_SCALES(reg1, reg2, reg3, reg4, r7, r8, r12) \
	VPAND r12, reg2, reg3; \
	VPSLLD $20, reg3, reg3; \
	VPAND r7, reg2, reg4; \
	VPSLLD $24, reg4, reg4; \
	VPOR reg4, reg3, reg3; \
	VMULPS r8, reg3, reg3; \
	VFMADD231PS (R9), reg3, reg1; \
	VPERMILPS $0xa0, (R10), reg4; \
	VMULPS reg4, reg3, reg3

// func dotNVFP4IntAVX2(xq *int8, xs, xsum *float32, codes, fp8 *byte, hs2 float32, nb int) float32
// dotNVFP4VNNI's sum with AVX2, two steps of 64 values at a time (their eight FP8
// block scales decoded at once), then a lone step: hs2·(Σ dec·xs·Σ u·q − 12·Σ
// dec·xsum), u = 12 + 2·e2m1.
TEXT ·dotNVFP4IntAVX2(SB), NOSPLIT, $0-60
	MOVQ xq+0(FP), DI
	MOVQ xs+8(FP), R10
	MOVQ xsum+16(FP), R9
	MOVQ codes+24(FP), SI
	MOVQ fp8+32(FP), R8
	MOVQ nb+48(FP), CX
	NIBBLE_CONSTS
	VBROADCASTI128 ·nvfp4Codes(SB), Y14
	MOVL $0x7f, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	MOVL $0x80, AX
	VMOVD AX, X7
	VPBROADCASTD X7, Y7
	MOVL $0x7b800000, AX             // 2^120
	VMOVD AX, X8
	VPBROADCASTD X8, Y8
	VMOVDQU nvfp4Spread<>+0(SB), Y6
	VMOVDQU nvfp4Spread<>+32(SB), Y5
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	MOVQ CX, BX
	SHRQ $1, BX
	JZ   nvfp4avx2tail
nvfp4avx2pair:
	VPMOVZXBD (R8), Y2               // the two steps' eight scale codes
	NVFP4_AVX2_SCALES(Y1, Y2, Y3, Y4, Y7, Y8, Y12)
	NVFP4_AVX2_STEP(0, 0, 32, Y6)
	NVFP4_AVX2_STEP(32, 64, 96, Y5)
	ADDQ $64, SI
	ADDQ $128, DI
	ADDQ $8, R8
	ADDQ $32, R9
	ADDQ $32, R10
	DECQ BX
	JNZ  nvfp4avx2pair
nvfp4avx2tail:
	VEXTRACTF128 $1, Y1, X2          // (the 128-bit forms below clear Y1's upper lanes)
	VADDPS X2, X1, X1
	ANDQ $1, CX
	JZ   nvfp4avx2sum
	VPMOVZXBD (R8), X2               // the last step's four scale codes (Y3's upper lanes zero)
	NVFP4_AVX2_SCALES(X1, X2, X3, X4, X7, X8, X12)
	NVFP4_AVX2_STEP(0, 0, 32, Y6)
nvfp4avx2sum:
	SUM_Y0(X2)
	VHADDPS X1, X1, X1
	VHADDPS X1, X1, X1
	MOVL $0x41400000, AX             // 12
	VMOVD AX, X2
	VFNMADD231SS X2, X1, X0          // − 12·Σ dec·xsum
	VMULSS hs2+40(FP), X0, X0
	VMOVSS X0, ret+56(FP)
	VZEROUPPER
	RET

// nvfp4Spread's companion for dotInt4IntAVX2: a step's two group scales (lanes 0, 1)
// over its eight sums, four each (sums 0–3 hold the step's first group).
DATA int4Spread<>+0(SB)/4, $0
DATA int4Spread<>+4(SB)/4, $0
DATA int4Spread<>+8(SB)/4, $0
DATA int4Spread<>+12(SB)/4, $0
DATA int4Spread<>+16(SB)/4, $1
DATA int4Spread<>+20(SB)/4, $1
DATA int4Spread<>+24(SB)/4, $1
DATA int4Spread<>+28(SB)/4, $1
GLOBL int4Spread<>(SB), RODATA|NOPTR, $32

// func dotInt4IntAVX2(xq *int8, xsl, xsum *float32, codes *byte, scales, mins *float32, c float32, steps int) float32
// Σ value · x over steps (> 0) of 64 Darkroom int4 values (two groups of 32, value =
// s·code + c·m: an affine group's minimum m with c = 1, a symmetric one's s with
// c = −8), x quantized by quantizeRow32 in
// nibbleOrderX's order (xq), each group's scale spread over the lanes its sums take (xsl,
// eight a step) and its xs·Σcode (xsum): a step's 32 code bytes split into their low
// nibbles (the even values) and their high ones (the odd), each times its 32 x codes
// in pairs (VPMADDUBSW: at most 2·15·127 a word, twice), summed exactly in eights
// (VPMADDWD), converted and scaled by s·xs; the minimums' part c·Σ m·xsum apart.
TEXT ·dotInt4IntAVX2(SB), NOSPLIT, $0-68
	MOVQ xq+0(FP), DI
	MOVQ xsl+8(FP), R10
	MOVQ xsum+16(FP), R11
	MOVQ codes+24(FP), SI
	MOVQ scales+32(FP), DX
	MOVQ mins+40(FP), R12
	MOVQ steps+56(FP), CX
	NIBBLE_CONSTS
	VMOVDQU int4Spread<>+0(SB), Y6
	VXORPS Y0, Y0, Y0
	VXORPS X3, X3, X3
int4intstep:
	VMOVDQU (SI), Y2
	VPSRLW $4, Y2, Y9
	VPAND Y15, Y2, Y2
	VPAND Y15, Y9, Y9
	VPMADDUBSW (DI), Y2, Y2
	VPMADDUBSW 32(DI), Y9, Y9
	VPADDW Y9, Y2, Y2
	VPMADDWD Y13, Y2, Y2
	VCVTDQ2PS Y2, Y2
	VMOVSD (DX), X4                  // the step's two scales
	VMOVSD (R12), X5                 // and minimums
	VMOVSD (R11), X7                 // and x's xs·Σcode
	VFMADD231PS X7, X5, X3           // m·xsum (lanes 0, 1)
	VPERMPS Y4, Y6, Y4
	VMULPS (R10), Y4, Y4             // s·xs over the sums
	VFMADD231PS Y4, Y2, Y0
	ADDQ $32, SI
	ADDQ $64, DI
	ADDQ $8, DX
	ADDQ $8, R12
	ADDQ $8, R11
	ADDQ $32, R10
	DECQ CX
	JNZ  int4intstep
	VEXTRACTF128 $1, Y0, X2
	VADDPS X2, X0, X0
	VBROADCASTSS c+48(FP), X2
	VFMADD231PS X2, X3, X0           // + c·Σ m·xsum
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMOVSS X0, ret+64(FP)
	VZEROUPPER
	RET

// func dotQ4_0IntAVX2(xq *int8, xs *float32, src *byte, nb int) float32
// dotQ5_0IntAVX2's sum for nb (> 0) Q4_0 blocks {fp16 d; 16 code bytes}: a block a
// step, its 32 codes [low nibbles, high nibbles] (values 0–15, then 16–31: x's codes
// in order) times x's by VPMADDUBSW (at most 2·15·127 a word) and VPMADDWD, widened
// and scaled by d·xs; each value is d·(code − 8), the 8 taken back as −8·Σ d·xs·Σcode.
TEXT ·dotQ4_0IntAVX2(SB), NOSPLIT, $0-36
	MOVQ xq+0(FP), DI
	MOVQ xs+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ nb+24(FP), CX
	NIBBLE_CONSTS
	VXORPS Y0, Y0, Y0
	VXORPS X3, X3, X3
q40int2block:
	BLOCK32_INT_SCALE
	NIBBLES32(2, X15)
	BLOCK32_INT_DOT(Y13)
	ADDQ $18, SI
	ADDQ $32, DI
	ADDQ $8, R10
	DECQ CX
	JNZ  q40int2block
	BLOCK32_INT_END($0x41000000)     // 8

// func dotQ5KIntAVX2(xq *int8, xs *float32, src *byte, nb int) float32
// Σ decoded value · x over nb (> 0) Q5_K blocks {fp16 d; fp16 dmin; u8 scales[12];
// u8 qh[32]; u8 qs[128]}, x quantized by q4kIntX for the AVX2 kernel (its codes in
// order, per block its eight groups' scales then their exact sums), in integer
// arithmetic with AVX2 and F16C: dotQ4KIntAVX2 with each code's fifth bit — bit g of
// qh[i] for value i of group g — added as 16 before the products (codes 0…31 times
// x's int8 codes, pairs summed in int16: at most 2·31·127).
// Q5K_PAIR dots a Q5_K block's group pair r — 32 code bytes at qs(SI), group 2r's
// low nibbles and 2r+1's high ones, their fifth bits bits 2r and 2r+1 of qh (Y2) —
// with x's 64 codes at DI (K4INT_PAIR_DOT; DX = 8r picks the scales): each fifth bit
// shifted to bit 4 of its byte (SHL by NL, SHH by NH: a word shift whose bits from
// the other byte fall outside the mask) and or'ed in.
#define Q5K_PAIR(qs, r8, SHL, NL, SHH, NH) \
	VMOVDQU qs(SI), Y10; \
	VPSRLW $4, Y10, Y11; \
	VPAND Y12, Y10, Y10; \
	VPAND Y12, Y11, Y11; \
	SHL $NL, Y2, Y14; \
	VPAND Y3, Y14, Y14; \
	VPOR Y14, Y10, Y10; \
	SHH $NH, Y2, Y14; \
	VPAND Y3, Y14, Y14; \
	VPOR Y14, Y11, Y11; \
	MOVQ $r8, DX; \
	K4INT_PAIR_DOT; \
	ADDQ $64, DI

TEXT ·dotQ5KIntAVX2(SB), NOSPLIT, $32-36
	MOVQ xq+0(FP), DI
	MOVQ xs+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ nb+24(FP), CX
	K4INT_CONSTS
	MOVL $0x10101010, AX
	VMOVD AX, X3
	VPBROADCASTD X3, Y3              // a code's fifth bit (16) in every byte
q5kint2block:
	K4INT_SCALES
	VMOVDQU 16(SI), Y2               // qh
	Q5K_PAIR(48, 0, VPSLLW, 4, VPSLLW, 3)
	Q5K_PAIR(80, 8, VPSLLW, 2, VPSLLW, 1)
	Q5K_PAIR(112, 16, VPSLLW, 0, VPSRLW, 1)
	Q5K_PAIR(144, 24, VPSRLW, 2, VPSRLW, 3)
	ADDQ $176, SI
	ADDQ $64, R10
	DECQ CX
	JNZ  q5kint2block
	K4INT_END

// q6kidx picks a Q6_K group's two scales of sixteen for the eight int32 sums of
// its 32 products (four values each): group j of a half-block's four takes scales
// 2j (lanes 0–3) and 2j+1 (lanes 4–7) of the half's eight (VPERMPS).
DATA q6kidx<>+0(SB)/4, $0
DATA q6kidx<>+4(SB)/4, $0
DATA q6kidx<>+8(SB)/4, $0
DATA q6kidx<>+12(SB)/4, $0
DATA q6kidx<>+16(SB)/4, $1
DATA q6kidx<>+20(SB)/4, $1
DATA q6kidx<>+24(SB)/4, $1
DATA q6kidx<>+28(SB)/4, $1
DATA q6kidx<>+32(SB)/4, $2
DATA q6kidx<>+36(SB)/4, $2
DATA q6kidx<>+40(SB)/4, $2
DATA q6kidx<>+44(SB)/4, $2
DATA q6kidx<>+48(SB)/4, $3
DATA q6kidx<>+52(SB)/4, $3
DATA q6kidx<>+56(SB)/4, $3
DATA q6kidx<>+60(SB)/4, $3
DATA q6kidx<>+64(SB)/4, $4
DATA q6kidx<>+68(SB)/4, $4
DATA q6kidx<>+72(SB)/4, $4
DATA q6kidx<>+76(SB)/4, $4
DATA q6kidx<>+80(SB)/4, $5
DATA q6kidx<>+84(SB)/4, $5
DATA q6kidx<>+88(SB)/4, $5
DATA q6kidx<>+92(SB)/4, $5
DATA q6kidx<>+96(SB)/4, $6
DATA q6kidx<>+100(SB)/4, $6
DATA q6kidx<>+104(SB)/4, $6
DATA q6kidx<>+108(SB)/4, $6
DATA q6kidx<>+112(SB)/4, $7
DATA q6kidx<>+116(SB)/4, $7
DATA q6kidx<>+120(SB)/4, $7
DATA q6kidx<>+124(SB)/4, $7
// the x scales of a block's groups 0–3 (4–7) against its scales 0–7 (8–15)
DATA q6kidx<>+128(SB)/4, $0
DATA q6kidx<>+132(SB)/4, $0
DATA q6kidx<>+136(SB)/4, $1
DATA q6kidx<>+140(SB)/4, $1
DATA q6kidx<>+144(SB)/4, $2
DATA q6kidx<>+148(SB)/4, $2
DATA q6kidx<>+152(SB)/4, $3
DATA q6kidx<>+156(SB)/4, $3
DATA q6kidx<>+160(SB)/4, $4
DATA q6kidx<>+164(SB)/4, $4
DATA q6kidx<>+168(SB)/4, $5
DATA q6kidx<>+172(SB)/4, $5
DATA q6kidx<>+176(SB)/4, $6
DATA q6kidx<>+180(SB)/4, $6
DATA q6kidx<>+184(SB)/4, $7
DATA q6kidx<>+188(SB)/4, $7
GLOBL q6kidx<>(SB), RODATA|NOPTR, $192

// Q6K_GROUP dots one Q6_K group's 32 unsigned codes (CODE) with x's (XOFF(DI)),
// each four products' int32 sum scaled by its sixteen's d·sc·xs (IDX picks it from
// SC) into ACC. Clobbers Y14.
#define Q6K_GROUP(CODE, XOFF, IDX, SC, ACC) \
	VPMADDUBSW XOFF(DI), CODE, CODE; \
	VPMADDWD Y13, CODE, CODE; \
	VCVTDQ2PS CODE, CODE; \
	VMOVDQU q6kidx<>+IDX(SB), Y14; \
	VPERMPS SC, Y14, Y14; \
	VFMADD231PS Y14, CODE, ACC

// Q6K_HALF dots a Q6_K half-block — 64 ql bytes at SI (groups 0 and 1 their low
// nibbles, 2 and 3 their high ones), 32 qh bytes at R8 (bits 2j and 2j+1 group j's
// high two bits) — with x's 128 codes at DI, its eight sixteens' scales in SC.
#define Q6K_HALF(SC) \
	VMOVDQU 0(SI), Y4; \
	VMOVDQU 32(SI), Y7; \
	VMOVDQU 0(R8), Y2; \
	VPAND Y12, Y4, Y10; \
	VPSLLW $4, Y2, Y11; \
	VPAND Y3, Y11, Y11; \
	VPOR Y11, Y10, Y10; \
	Q6K_GROUP(Y10, 0, 0, SC, Y0); \
	VPAND Y12, Y7, Y10; \
	VPSLLW $2, Y2, Y11; \
	VPAND Y3, Y11, Y11; \
	VPOR Y11, Y10, Y10; \
	Q6K_GROUP(Y10, 32, 32, SC, Y1); \
	VPSRLW $4, Y4, Y10; \
	VPAND Y12, Y10, Y10; \
	VPAND Y3, Y2, Y11; \
	VPOR Y11, Y10, Y10; \
	Q6K_GROUP(Y10, 64, 64, SC, Y0); \
	VPSRLW $4, Y7, Y10; \
	VPAND Y12, Y10, Y10; \
	VPSRLW $2, Y2, Y11; \
	VPAND Y3, Y11, Y11; \
	VPOR Y11, Y10, Y10; \
	Q6K_GROUP(Y10, 96, 96, SC, Y1)

// K16_END returns the sums less off (a float32's bits) times the offsets.
#define K16_END(off) \
	VADDPS Y1, Y0, Y0; \
	MOVL off, AX; \
	VMOVD AX, X14; \
	VBROADCASTSS X14, Y14; \
	VFNMADD231PS Y14, Y9, Y0; \
	SUM_Y0(X1); \
	VMOVSS X0, ret+32(FP); \
	VZEROUPPER; \
	RET

// func dotQ6KIntAVX2(xq *int8, xs *float32, src *byte, nb int) float32
// Σ decoded value · x over nb (> 0) Q6_K blocks {u8 ql[128]; u8 qh[64]; i8
// scales[16]; fp16 d}, x quantized by q6kIntX (its codes in order, per block its
// eight groups' scales and then, per sixteen values, their scale times the sum of
// their codes), in integer arithmetic with AVX2 and F16C: each value's code q + 32
// (0…63, unsigned) times x's int8 code, pairs summed in int16 (at most 2·63·127),
// four in int32, scaled by d·sc·xs; the 32 taken back as 32·d·sc·xs·Σcode per
// sixteen — the exact sum llama.cpp's q6_K·q8_K dot takes.
TEXT ·dotQ6KIntAVX2(SB), NOSPLIT, $0-36
	MOVQ xq+0(FP), DI
	MOVQ xs+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ nb+24(FP), CX
	KINT_CONSTS($0x0f0f0f0f)          // a nibble
	MOVL $0x30303030, AX
	VMOVD AX, X3
	VPBROADCASTD X3, Y3              // a code's high two bits
q6kint2block:
	MOVWLZX 208(SI), AX
	VMOVD AX, X4
	VCVTPH2PS X4, X4
	VBROADCASTSS X4, Y4              // d
	VPMOVSXBD 192(SI), Y5
	VPMOVSXBD 200(SI), Y6
	VCVTDQ2PS Y5, Y5
	VCVTDQ2PS Y6, Y6
	VMULPS Y4, Y5, Y5                // d·sc_i, sixteens 0–7
	VMULPS Y4, Y6, Y6                // 8–15
	VFMADD231PS 32(R10), Y5, Y9      // d·sc_i·xs·Σcode_i: the offsets
	VFMADD231PS 64(R10), Y6, Y9
	VMOVUPS 0(R10), Y8               // the groups' x scales
	VMOVDQU q6kidx<>+128(SB), Y14
	VPERMPS Y8, Y14, Y14
	VMULPS Y14, Y5, Y5               // d·sc_i·xs_(i/2)
	VMOVDQU q6kidx<>+160(SB), Y14
	VPERMPS Y8, Y14, Y14
	VMULPS Y14, Y6, Y6
	LEAQ 128(SI), R8
	Q6K_HALF(Y5)
	ADDQ $64, SI
	ADDQ $32, R8
	ADDQ $128, DI
	Q6K_HALF(Y6)
	ADDQ $146, SI                    // 210 − 64
	ADDQ $128, DI
	ADDQ $96, R10
	DECQ CX
	JNZ  q6kint2block
	K16_END($0x42000000)             // 32

// BLOCK32_INT_SCALE_MIN is BLOCK32_INT_SCALE for a block {fp16 d; fp16 m; …} whose
// values are d·q + m: Y5 d·xs, and X3 summing m·xs·Σcode (x's pairs).
#define BLOCK32_INT_SCALE_MIN \
	BLOCK_D(X4); \
	VMULSS 0(R10), X4, X5; \
	VBROADCASTSS X5, Y5; \
	MOVWLZX 2(SI), AX; \
	VMOVD AX, X6; \
	VCVTPH2PS X6, X6; \
	VFMADD231SS 4(R10), X6, X3

// func dotQ4_1IntAVX2(xq *int8, xs *float32, src *byte, nb int) float32
// Σ decoded value · x over nb (> 0) Q4_1 blocks {fp16 d; fp16 m; u8 qs[16]}, x
// quantized by quantizeRow32 (its codes in order and pairs), in integer arithmetic
// with AVX2 and F16C: each block's 32 codes (0…15) times x's, summed in int32 and
// scaled by d·xs, and m·xs·Σcode added apart.
TEXT ·dotQ4_1IntAVX2(SB), NOSPLIT, $0-36
	MOVQ xq+0(FP), DI
	MOVQ xs+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ nb+24(FP), CX
	NIBBLE_CONSTS
	VXORPS Y0, Y0, Y0
	VXORPS X3, X3, X3
q41int2block:
	BLOCK32_INT_SCALE_MIN
	NIBBLES32(4, X15)
	BLOCK32_INT_DOT(Y13)
	ADDQ $20, SI
	ADDQ $32, DI
	ADDQ $8, R10
	DECQ CX
	JNZ  q41int2block
	BLOCK32_INT_END($0xbf800000)     // −1: the minimums added

// func dotQ5_1IntAVX2(xq *int8, xs *float32, src *byte, nb int) float32
// dotQ4_1IntAVX2 for Q5_1 blocks {fp16 d; fp16 m; u32 qh; u8 qs[16]}: codes 0…31,
// qh's bit i the fifth of value i.
TEXT ·dotQ5_1IntAVX2(SB), NOSPLIT, $0-36
	MOVQ xq+0(FP), DI
	MOVQ xs+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ nb+24(FP), CX
	Q50_CODES_CONSTS
	MOVL $0x00010001, AX
	VMOVD AX, X9
	VPBROADCASTD X9, Y9              // 16-bit ones
	VXORPS Y0, Y0, Y0
	VXORPS X3, X3, X3
q51int2block:
	BLOCK32_INT_SCALE_MIN
	Q5_CODES_AVX2(8, 4)
	BLOCK32_INT_DOT(Y9)
	ADDQ $24, SI
	ADDQ $32, DI
	ADDQ $8, R10
	DECQ CX
	JNZ  q51int2block
	BLOCK32_INT_END($0xbf800000)     // −1: the minimums added

// K16_XSCALES turns the block's sixteen d·scale products (Y5: sixteens 0–7, Y6: 8–15)
// into d·scale·xs of their group of 32 (x's scales at 0(R10); clobbers Y8, Y14), for
// Q6K_GROUP's picks.
#define K16_XSCALES \
	VMOVUPS 0(R10), Y8; \
	VMOVDQU q6kidx<>+128(SB), Y14; \
	VPERMPS Y8, Y14, Y14; \
	VMULPS Y14, Y5, Y5; \
	VMOVDQU q6kidx<>+160(SB), Y14; \
	VPERMPS Y8, Y14, Y14; \
	VMULPS Y14, Y6, Y6

// Q3K_GROUP makes group j of a Q3_K or Q2_K half-block's codes — the 2-bit field at
// bits 2j of its 32 qs bytes (Y7), and for Q3_K the high bit from hmask (Y2, its bit
// k = 4·half+j shifted to bit 2 by HOP $HN, masked by Y3) — and dots them with x's
// 32 codes at XOFF(DI), scaled by SC's sixteens, into ACC (Q6K_GROUP).
#define Q3K_GROUP(QSHIFT, HOP, HN, XOFF, SC, ACC) \
	VPSRLW $QSHIFT, Y7, Y10; \
	VPAND Y12, Y10, Y10; \
	HOP $HN, Y2, Y11; \
	VPAND Y3, Y11, Y11; \
	VPOR Y11, Y10, Y10; \
	Q6K_GROUP(Y10, XOFF, XOFF, SC, ACC)

#define Q2K_GROUP(QSHIFT, XOFF, SC, ACC) \
	VPSRLW $QSHIFT, Y7, Y10; \
	VPAND Y12, Y10, Y10; \
	Q6K_GROUP(Y10, XOFF, XOFF, SC, ACC)

// func dotQ3KIntAVX2(xq *int8, xs *float32, src *byte, nb int) float32
// Σ decoded value · x over nb (> 0) Q3_K blocks {u8 hmask[32]; u8 qs[64]; u8
// scales[12]; fp16 d}, x quantized by q6kIntX, in integer arithmetic with AVX2 and
// F16C: dotQ6KIntAVX2's sum with each value's code q+4 (0…7: its 2-bit field and its
// hmask bit as bit 2) and d·(scale−32) per sixteen (the kmask shuffle of
// dequantize_row_q3_K in scalar registers), the 4 taken back against x's code sums.
TEXT ·dotQ3KIntAVX2(SB), NOSPLIT, $0-36
	MOVQ xq+0(FP), DI
	MOVQ xs+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ nb+24(FP), CX
	KINT_CONSTS($0x03030303)          // a 2-bit field
	MOVL $0x04040404, AX
	VMOVD AX, X3
	VPBROADCASTD X3, Y3              // bit 2: the hmask bit's place
	MOVL $0x42000000, AX             // 32
	VMOVD AX, X15
	VBROADCASTSS X15, Y15
q3kint2block:
	MOVWLZX 108(SI), AX
	VMOVD AX, X4
	VCVTPH2PS X4, X4
	VBROADCASTSS X4, Y4              // d
	MOVL 96(SI), R8
	MOVL 100(SI), R9
	MOVL 104(SI), R11
	MOVL R8, AX                      // sixteens 0–3: low nibbles of bytes 0–3, bits 0–1 of bytes 8–11
	ANDL $0x0f0f0f0f, AX
	MOVL R11, BX
	ANDL $0x03030303, BX
	SHLL $4, BX
	ORL  BX, AX
	MOVL R9, DX                      // 4–7: low nibbles of bytes 4–7, bits 2–3
	ANDL $0x0f0f0f0f, DX
	MOVL R11, BX
	SHRL $2, BX
	ANDL $0x03030303, BX
	SHLL $4, BX
	ORL  BX, DX
	SHLQ $32, DX
	ORQ  DX, AX
	VMOVQ AX, X5
	MOVL R8, AX                      // 8–11: high nibbles of bytes 0–3, bits 4–5
	SHRL $4, AX
	ANDL $0x0f0f0f0f, AX
	MOVL R11, BX
	SHRL $4, BX
	ANDL $0x03030303, BX
	SHLL $4, BX
	ORL  BX, AX
	MOVL R9, DX                      // 12–15: high nibbles of bytes 4–7, bits 6–7
	SHRL $4, DX
	ANDL $0x0f0f0f0f, DX
	MOVL R11, BX
	SHRL $6, BX
	ANDL $0x03030303, BX
	SHLL $4, BX
	ORL  BX, DX
	SHLQ $32, DX
	ORQ  DX, AX
	VMOVQ AX, X6
	VPMOVZXBD X5, Y5
	VPMOVZXBD X6, Y6
	VCVTDQ2PS Y5, Y5
	VCVTDQ2PS Y6, Y6
	VSUBPS Y15, Y5, Y5
	VSUBPS Y15, Y6, Y6
	VMULPS Y4, Y5, Y5                // d·(scale − 32), sixteens 0–7
	VMULPS Y4, Y6, Y6                // 8–15
	VFMADD231PS 32(R10), Y5, Y9      // d·sc_i·xs·Σcode_i: the offsets
	VFMADD231PS 64(R10), Y6, Y9
	K16_XSCALES
	VMOVDQU 0(SI), Y2                // hmask
	VMOVDQU 32(SI), Y7               // qs, elements 0–127
	Q3K_GROUP(0, VPSLLW, 2, 0, Y5, Y0)
	Q3K_GROUP(2, VPSLLW, 1, 32, Y5, Y1)
	Q3K_GROUP(4, VPSLLW, 0, 64, Y5, Y0)
	Q3K_GROUP(6, VPSRLW, 1, 96, Y5, Y1)
	ADDQ $128, DI
	VMOVDQU 64(SI), Y7               // elements 128–255
	Q3K_GROUP(0, VPSRLW, 2, 0, Y6, Y0)
	Q3K_GROUP(2, VPSRLW, 3, 32, Y6, Y1)
	Q3K_GROUP(4, VPSRLW, 4, 64, Y6, Y0)
	Q3K_GROUP(6, VPSRLW, 5, 96, Y6, Y1)
	ADDQ $128, DI
	ADDQ $110, SI
	ADDQ $96, R10
	DECQ CX
	JNZ  q3kint2block
	K16_END($0x40800000)             // 4

// func dotQ2KIntAVX2(xq *int8, xs *float32, src *byte, nb int) float32
// Σ decoded value · x over nb (> 0) Q2_K blocks {u8 scales[16]; u8 qs[64]; fp16 d;
// fp16 dmin}, x quantized by q6kIntX, in integer arithmetic with AVX2 and F16C:
// dotQ6KIntAVX2's sum with the 2-bit codes and d·(sc & 15) per sixteen, each
// sixteen's minimum dmin·(sc >> 4) taken off against x's code sums.
TEXT ·dotQ2KIntAVX2(SB), NOSPLIT, $0-36
	MOVQ xq+0(FP), DI
	MOVQ xs+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ nb+24(FP), CX
	KINT_CONSTS($0x03030303)          // a 2-bit field
	MOVL $15, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15            // a scale's four bits
q2kint2block:
	VPBROADCASTD 80(SI), X4
	VCVTPH2PS X4, X4                 // d, dmin, d, dmin
	VMOVSHDUP X4, X3
	VBROADCASTSS X3, Y3              // dmin
	VBROADCASTSS X4, Y4              // d
	VPMOVZXBD 0(SI), Y5
	VPMOVZXBD 8(SI), Y6
	VPSRLD $4, Y5, Y10
	VPSRLD $4, Y6, Y11
	VPAND Y15, Y5, Y5
	VPAND Y15, Y6, Y6
	VCVTDQ2PS Y5, Y5
	VCVTDQ2PS Y6, Y6
	VCVTDQ2PS Y10, Y10
	VCVTDQ2PS Y11, Y11
	VMULPS Y4, Y5, Y5                // d·(sc & 15), sixteens 0–7
	VMULPS Y4, Y6, Y6                // 8–15
	VMULPS Y3, Y10, Y10              // dmin·(sc >> 4)
	VMULPS Y3, Y11, Y11
	VFMADD231PS 32(R10), Y10, Y9     // the minimums against xs·Σcode
	VFMADD231PS 64(R10), Y11, Y9
	K16_XSCALES
	VMOVDQU 16(SI), Y7               // qs, elements 0–127
	Q2K_GROUP(0, 0, Y5, Y0)
	Q2K_GROUP(2, 32, Y5, Y1)
	Q2K_GROUP(4, 64, Y5, Y0)
	Q2K_GROUP(6, 96, Y5, Y1)
	ADDQ $128, DI
	VMOVDQU 48(SI), Y7               // elements 128–255
	Q2K_GROUP(0, 0, Y6, Y0)
	Q2K_GROUP(2, 32, Y6, Y1)
	Q2K_GROUP(4, 64, Y6, Y0)
	Q2K_GROUP(6, 96, Y6, Y1)
	ADDQ $128, DI
	ADDQ $84, SI
	ADDQ $96, R10
	DECQ CX
	JNZ  q2kint2block
	K16_END($0x3f800000)             // 1: the minimums

// iq4kv is ggml's kvalues_iq4nl, IQ4_NL's and IQ4_XS's sixteen levels, for VPSHUFB.
DATA iq4kv<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA iq4kv<>+8(SB)/8, $0x7159453526190d01
GLOBL iq4kv<>(SB), RODATA|NOPTR, $16

// IQ4_DOT dots the 32 nibbles in Y10 (IQ4_NL's layout, NIBBLES32), looked up as their
// signed levels (Y12), with x's 32 codes at DI: the products' signs moved onto the
// levels (VPSIGNB) so that VPMADDUBSW takes |x| unsigned (pairs at most 2·127·127),
// then VPMADDWD by ones (Y13) into eight int32 sums, widened into Y10.
#define IQ4_DOT \
	VPSHUFB Y10, Y12, Y10; \
	VMOVDQU 0(DI), Y11; \
	VPSIGNB Y11, Y10, Y10; \
	VPABSB Y11, Y11; \
	VPMADDUBSW Y10, Y11, Y10; \
	VPMADDWD Y13, Y10, Y10; \
	VCVTDQ2PS Y10, Y10

// func dotIQ4NLIntAVX2(xq *int8, xs *float32, src *byte, nb int) float32
// Σ decoded value · x over nb (> 0) IQ4_NL blocks {fp16 d; u8 qs[16]}, x quantized by
// quantizeRow32, in integer arithmetic with AVX2 and F16C: each block's 32 levels
// (IQ4_DOT) times x's codes, scaled by d·xs.
TEXT ·dotIQ4NLIntAVX2(SB), NOSPLIT, $0-36
	MOVQ xq+0(FP), DI
	MOVQ xs+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ nb+24(FP), CX
	NIBBLE_CONSTS
	VBROADCASTI128 iq4kv<>(SB), Y12
	VXORPS Y0, Y0, Y0
	VXORPS X3, X3, X3
iq4nlint2block:
	BLOCK32_INT_SCALE
	NIBBLES32(2, X15)
	IQ4_DOT
	VFMADD231PS Y5, Y10, Y0
	ADDQ $18, SI
	ADDQ $32, DI
	ADDQ $8, R10
	DECQ CX
	JNZ  iq4nlint2block
	BLOCK32_INT_END($0)              // no offset: the levels are signed

// iq4xsShifts are VPSRLVD counts: lane g takes group g's nibble of scales_l (4g) and
// its two bits of scales_h (2g).
DATA iq4xsShifts<>+0(SB)/4, $0
DATA iq4xsShifts<>+4(SB)/4, $4
DATA iq4xsShifts<>+8(SB)/4, $8
DATA iq4xsShifts<>+12(SB)/4, $12
DATA iq4xsShifts<>+16(SB)/4, $16
DATA iq4xsShifts<>+20(SB)/4, $20
DATA iq4xsShifts<>+24(SB)/4, $24
DATA iq4xsShifts<>+28(SB)/4, $28
DATA iq4xsShifts<>+32(SB)/4, $0
DATA iq4xsShifts<>+36(SB)/4, $2
DATA iq4xsShifts<>+40(SB)/4, $4
DATA iq4xsShifts<>+44(SB)/4, $6
DATA iq4xsShifts<>+48(SB)/4, $8
DATA iq4xsShifts<>+52(SB)/4, $10
DATA iq4xsShifts<>+56(SB)/4, $12
DATA iq4xsShifts<>+60(SB)/4, $14
GLOBL iq4xsShifts<>(SB), RODATA|NOPTR, $64

// func dotIQ4XSIntAVX2(xq *int8, xs *float32, src *byte, nb int) float32
// Σ decoded value · x over nb (> 0) IQ4_XS blocks {fp16 d; u16 scales_h; u8
// scales_l[4]; u8 qs[128]}, x quantized by quantizeRow32, in integer arithmetic with
// AVX2 and F16C: each block's eight groups' scales d·(ls−32)·xs unpacked at once (a
// variable shift per group, VPSRLVD), then each group's 32 levels (IQ4_DOT, IQ4_NL's
// layout) times x's codes.
TEXT ·dotIQ4XSIntAVX2(SB), NOSPLIT, $32-36
	MOVQ xq+0(FP), DI
	MOVQ xs+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ nb+24(FP), CX
	NIBBLE_CONSTS
	VBROADCASTI128 iq4kv<>(SB), Y12
	VMOVDQU iq4xsShifts<>+0(SB), Y8
	VMOVDQU iq4xsShifts<>+32(SB), Y9
	MOVL $15, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14            // a nibble
	MOVL $3, AX
	VMOVD AX, X7
	VPBROADCASTD X7, Y7              // two bits
	MOVL $0x42000000, AX             // 32
	VMOVD AX, X3
	VBROADCASTSS X3, Y3
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
iq4xsint2block:
	VPBROADCASTD 0(SI), X4
	VCVTPH2PS X4, X4
	VBROADCASTSS X4, Y4              // d
	VPBROADCASTD 4(SI), Y5           // scales_l
	VPSRLVD Y8, Y5, Y5
	VPAND Y14, Y5, Y5                // ls's low nibbles
	VPBROADCASTD 0(SI), Y6           // scales_h in the high half of each lane
	VPSRLD $16, Y6, Y6
	VPSRLVD Y9, Y6, Y6
	VPAND Y7, Y6, Y6
	VPSLLD $4, Y6, Y6
	VPOR Y6, Y5, Y5                  // ls, 0…63
	VCVTDQ2PS Y5, Y5
	VSUBPS Y3, Y5, Y5
	VMULPS Y4, Y5, Y5                // d·(ls − 32)
	VMOVUPS 0(R10), Y10              // x's (scale, scale·Σcode) pairs, groups 0–3
	VMOVUPS 32(R10), Y11             // 4–7
	VSHUFPS $0x88, Y11, Y10, Y10     // scales 0, 2, 4, 6 | 1, 3, 5, 7 of each half: 0 1 4 5 | 2 3 6 7
	VPERMPD $0xd8, Y10, Y10          // 0 1 2 3 4 5 6 7
	VMULPS Y10, Y5, Y5
	VMOVUPS Y5, 0(SP)
	ADDQ $8, SI
	XORQ DX, DX                      // the group
iq4xsint2group:
	NIBBLES32(0, X15)
	IQ4_DOT
	VBROADCASTSS 0(SP)(DX*4), Y5
	VFMADD231PS Y5, Y10, Y0
	ADDQ $16, SI
	ADDQ $32, DI
	INCQ DX
	CMPQ DX, $8
	JNE  iq4xsint2group
	ADDQ $64, R10
	DECQ CX
	JNZ  iq4xsint2block
	VADDPS Y1, Y0, Y0
	SUM_Y0(X1)
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET
