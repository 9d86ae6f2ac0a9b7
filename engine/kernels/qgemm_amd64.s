//go:build !noasm

#include "textflag.h"

// func quantizeRowAVX512(q *int8, pairs *float32, a *float32, scale *float32, groups, gs int)
//
// Per group of gs = 32 or 16 (a's values times scale's where scale is not nil): the
// largest magnitude as the integer maximum of the values' bits without their signs
// (an infinity or a NaN above every finite value), then the codes rounded to nearest
// even (VCVTPS2DQ) and narrowed (VPMOVSDB), and the pair (amax/127, amax/127 · Σ
// codes): quantizeRowGo's arithmetic. A group of 16 is the first of a group of 32's
// two vectors, the second zero (it changes neither the maximum nor the sum) and
// neither loaded nor stored.
TEXT ·quantizeRowAVX512(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), DI
	MOVQ pairs+8(FP), DX
	MOVQ a+16(FP), SI
	MOVQ scale+24(FP), R8
	MOVQ groups+32(FP), CX
	MOVQ gs+40(FP), R9
	LEAQ (R9*4), R10 // a group's bytes of a and of scale
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z31
	MOVL $0x42fe0000, AX // 127.0
	VMOVD AX, X30
	VPXORD X29, X29, X29
qloop:
	VMOVUPS (SI), Z0
	VPXORD Z1, Z1, Z1
	CMPQ R9, $16
	JEQ qloaded
	VMOVUPS 64(SI), Z1
qloaded:
	TESTQ R8, R8
	JZ qscaled
	VMULPS (R8), Z0, Z0
	CMPQ R9, $16
	JEQ qscalenext
	VMULPS 64(R8), Z1, Z1
qscalenext:
	ADDQ R10, R8
qscaled:
	VPANDD Z31, Z0, Z2
	VPANDD Z31, Z1, Z3
	VPMAXUD Z3, Z2, Z2
	VEXTRACTI32X8 $1, Z2, Y3
	VPMAXUD Y3, Y2, Y2
	VEXTRACTI128 $1, Y2, X3
	VPMAXUD X3, X2, X2
	VPSHUFD $0x4e, X2, X3
	VPMAXUD X3, X2, X2
	VPSHUFD $0xb1, X2, X3
	VPMAXUD X3, X2, X2
	VMOVD X2, AX
	CMPL AX, $0x7f800000
	JAE qnonfinite
	CMPL AX, $0x03800000
	JB qzero
	VDIVSS X2, X30, X4 // 127/amax
	VDIVSS X30, X2, X5 // amax/127
	VBROADCASTSS X4, Z4
	VMULPS Z4, Z0, Z0
	VMULPS Z4, Z1, Z1
	VCVTPS2DQ Z0, Z0
	VCVTPS2DQ Z1, Z1
	VPMOVSDB Z0, X6
	VMOVDQU X6, (DI)
	CMPQ R9, $16
	JEQ qstored
	VPMOVSDB Z1, X7
	VMOVDQU X7, 16(DI)
qstored:
	VPADDD Z1, Z0, Z0
	VEXTRACTI32X8 $1, Z0, Y1
	VPADDD Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xb1, X0, X1
	VPADDD X1, X0, X0
	VCVTDQ2PS X0, X0
	VMULSS X5, X0, X0
	VMOVSS X5, (DX)
	VMOVSS X0, 4(DX)
qnext:
	ADDQ R10, SI
	ADDQ R9, DI
	ADDQ $8, DX
	DECQ CX
	JNZ qloop
	VZEROUPPER
	RET
qzero:
	MOVQ $0, (DX)
	JMP qclear
qnonfinite:
	MOVL $0x7fc00000, (DX)
	MOVL $0, 4(DX)
qclear:
	VMOVDQU32 X29, (DI)
	CMPQ R9, $16
	JEQ qnext
	VMOVDQU32 X29, 16(DI)
	JMP qnext

// qPackOrder undoes VPACKSSDW and VPACKSSWB's interleaving of 128-bit lanes: after
// them dword i of a group's 32 codes holds codes 4·order[i] … 4·order[i]+3 for order
// 0, 2, 4, 6, 1, 3, 5, 7; VPERMD by these indices puts them back in order.
DATA qPackOrder<>+0(SB)/4, $0
DATA qPackOrder<>+4(SB)/4, $4
DATA qPackOrder<>+8(SB)/4, $1
DATA qPackOrder<>+12(SB)/4, $5
DATA qPackOrder<>+16(SB)/4, $2
DATA qPackOrder<>+20(SB)/4, $6
DATA qPackOrder<>+24(SB)/4, $3
DATA qPackOrder<>+28(SB)/4, $7
GLOBL qPackOrder<>(SB), RODATA|NOPTR, $32

// func quantizeRowAVX2(q *int8, pairs *float32, a *float32, scale *float32, groups, gs int)
//
// quantizeRowAVX512 with ymm registers: a group of 32 is four vectors of eight (of 16,
// two and two zero), the codes narrowed by VPACKSSDW and VPACKSSWB (saturating, as
// VPMOVSDB; the codes are within ±127) and put back in order by VPERMD.
TEXT ·quantizeRowAVX2(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), DI
	MOVQ pairs+8(FP), DX
	MOVQ a+16(FP), SI
	MOVQ scale+24(FP), R8
	MOVQ groups+32(FP), CX
	MOVQ gs+40(FP), R9
	LEAQ (R9*4), R10 // a group's bytes of a and of scale
	MOVL $0x7fffffff, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x42fe0000, AX // 127.0
	VMOVD AX, X14
	VMOVDQU qPackOrder<>(SB), Y13
	VPXOR Y12, Y12, Y12
q2loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	CMPQ R9, $16
	JEQ q2loaded
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
q2loaded:
	TESTQ R8, R8
	JZ q2scaled
	VMULPS (R8), Y0, Y0
	VMULPS 32(R8), Y1, Y1
	CMPQ R9, $16
	JEQ q2scalenext
	VMULPS 64(R8), Y2, Y2
	VMULPS 96(R8), Y3, Y3
q2scalenext:
	ADDQ R10, R8
q2scaled:
	VPAND Y15, Y0, Y4
	VPAND Y15, Y1, Y5
	VPAND Y15, Y2, Y6
	VPAND Y15, Y3, Y7
	VPMAXUD Y5, Y4, Y4
	VPMAXUD Y7, Y6, Y6
	VPMAXUD Y6, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPMAXUD X5, X4, X4
	VPSHUFD $0x4e, X4, X5
	VPMAXUD X5, X4, X4
	VPSHUFD $0xb1, X4, X5
	VPMAXUD X5, X4, X4
	VMOVD X4, AX
	CMPL AX, $0x7f800000
	JAE q2nonfinite
	CMPL AX, $0x03800000
	JB q2zero
	VDIVSS X4, X14, X5 // 127/amax
	VDIVSS X14, X4, X6 // amax/127
	VBROADCASTSS X5, Y5
	VMULPS Y5, Y0, Y0
	VMULPS Y5, Y1, Y1
	VMULPS Y5, Y2, Y2
	VMULPS Y5, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPACKSSDW Y1, Y0, Y8
	VPACKSSDW Y3, Y2, Y9
	VPACKSSWB Y9, Y8, Y8
	VPERMD Y8, Y13, Y8
	VMOVDQU X8, (DI)
	CMPQ R9, $16
	JEQ q2stored
	VEXTRACTI128 $1, Y8, 16(DI)
q2stored:
	VPADDD Y1, Y0, Y0
	VPADDD Y3, Y2, Y2
	VPADDD Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xb1, X0, X1
	VPADDD X1, X0, X0
	VCVTDQ2PS X0, X0
	VMULSS X6, X0, X0
	VMOVSS X6, (DX)
	VMOVSS X0, 4(DX)
q2next:
	ADDQ R10, SI
	ADDQ R9, DI
	ADDQ $8, DX
	DECQ CX
	JNZ q2loop
	VZEROUPPER
	RET
q2zero:
	MOVQ $0, (DX)
	JMP q2clear
q2nonfinite:
	MOVL $0x7fc00000, (DX)
	MOVL $0, 4(DX)
q2clear:
	VMOVDQU X12, (DI)
	CMPQ R9, $16
	JEQ q2next
	VMOVDQU X12, 16(DI)
	JMP q2next

// func unpackNibblesAVX2(dst, src *byte, n int, lut *byte)
//
// unpackNibblesAVX512 16 bytes of src at a time.
TEXT ·unpackNibblesAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ lut+24(FP), R8
	SHRQ $4, CX
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VBROADCASTI128 (R8), Y14
u2loop:
	VPMOVZXBW (SI), Y0
	VPSLLW $4, Y0, Y1
	VPOR Y1, Y0, Y0
	VPAND Y15, Y0, Y0
	VPSHUFB Y0, Y14, Y0
	VMOVDQU Y0, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	DECQ CX
	JNZ u2loop
	VZEROUPPER
	RET

// func unpackNibblesAVX512(dst, src *byte, n int, lut *byte)
//
// 32 bytes of src at a time: each widened to a 16-bit word b, then (b | b<<4) &
// 0x0f0f puts its low nibble in the word's first byte and its high one in the second,
// and VPSHUFB maps each nibble through the 16-byte table lut.
TEXT ·unpackNibblesAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ lut+24(FP), R8
	SHRQ $5, CX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	VBROADCASTI32X4 (R8), Z30
uloop:
	VPMOVZXBW (SI), Z0
	VPSLLW $4, Z0, Z1
	VPORD Z1, Z0, Z0
	VPANDD Z31, Z0, Z0
	VPSHUFB Z0, Z30, Z0
	VMOVDQU64 Z0, (DI)
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ uloop
	VZEROUPPER
	RET

// func interleave4AVX2(dst *byte, panelStride int, r0, r1, r2, r3 *byte, cols int)
//
// Four rows of int8 codes, 32 columns at a time, as the integer product's packed
// panels want them: each code + 128 (its top bit flipped), and for each column its
// four rows' bytes side by side — columns 0–15 in 64 bytes at dst, 16–31 in the 64
// after — then the next 32 columns panelStride bytes on. Per 128-bit lane, bytes then
// 16-bit words interleaved: rows 0 and 1, rows 2 and 3, then the two pairs.
TEXT ·interleave4AVX2(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ panelStride+8(FP), R9
	MOVQ r0+16(FP), AX
	MOVQ r1+24(FP), BX
	MOVQ r2+32(FP), DX
	MOVQ r3+40(FP), SI
	MOVQ cols+48(FP), CX
	SHRQ $5, CX
	MOVL $0x80808080, R8
	VMOVD R8, X15
	VPBROADCASTD X15, Y15
iloop:
	VPXOR (AX), Y15, Y0
	VPXOR (BX), Y15, Y1
	VPXOR (DX), Y15, Y2
	VPXOR (SI), Y15, Y3
	VPUNPCKLBW Y1, Y0, Y4 // rows 0, 1: columns 0–7 of each lane
	VPUNPCKHBW Y1, Y0, Y5 // 8–15
	VPUNPCKLBW Y3, Y2, Y6
	VPUNPCKHBW Y3, Y2, Y7
	VPUNPCKLWD Y6, Y4, Y8 // columns 0–3, four rows each
	VPUNPCKHWD Y6, Y4, Y9 // 4–7
	VPUNPCKLWD Y7, Y5, Y10 // 8–11
	VPUNPCKHWD Y7, Y5, Y11 // 12–15
	VMOVDQU X8, (DI)
	VMOVDQU X9, 16(DI)
	VMOVDQU X10, 32(DI)
	VMOVDQU X11, 48(DI)
	VEXTRACTI128 $1, Y8, 64(DI)
	VEXTRACTI128 $1, Y9, 80(DI)
	VEXTRACTI128 $1, Y10, 96(DI)
	VEXTRACTI128 $1, Y11, 112(DI)
	ADDQ $32, AX
	ADDQ $32, BX
	ADDQ $32, DX
	ADDQ $32, SI
	ADDQ R9, DI
	DECQ CX
	JNZ iloop
	VZEROUPPER
	RET

// func xor80AVX512(dst, src *byte, n int)
//
// n bytes (a multiple of 64) of src with their top bit flipped into dst.
TEXT ·xor80AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $6, CX
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z31
xloop:
	VPXORD (SI), Z31, Z0
	VMOVDQU64 Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ xloop
	VZEROUPPER
	RET

// func xor80AVX2(dst, src *byte, n int)
//
// xor80AVX512 32 bytes at a time.
TEXT ·xor80AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $5, CX
	MOVL $0x80808080, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
x2loop:
	VPXOR (SI), Y15, Y0
	VMOVDQU Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ x2loop
	VZEROUPPER
	RET

// func unpackQ4KAVX2(dst, src *byte, blocks int)
//
// The codes of Q4_K blocks (144 bytes: 16 of scales, then 128 of nibbles) in input
// order: for each run of 32 bytes, the low nibbles, then the high ones (256 a block).
TEXT ·unpackQ4KAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ blocks+16(FP), CX
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
kloop:
	VMOVDQU 16(SI), Y0
	VMOVDQU 48(SI), Y2
	VMOVDQU 80(SI), Y4
	VMOVDQU 112(SI), Y6
	VPSRLW $4, Y0, Y1
	VPSRLW $4, Y2, Y3
	VPSRLW $4, Y4, Y5
	VPSRLW $4, Y6, Y7
	VPAND Y15, Y0, Y0
	VPAND Y15, Y1, Y1
	VPAND Y15, Y2, Y2
	VPAND Y15, Y3, Y3
	VPAND Y15, Y4, Y4
	VPAND Y15, Y5, Y5
	VPAND Y15, Y6, Y6
	VPAND Y15, Y7, Y7
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, 64(DI)
	VMOVDQU Y3, 96(DI)
	VMOVDQU Y4, 128(DI)
	VMOVDQU Y5, 160(DI)
	VMOVDQU Y6, 192(DI)
	VMOVDQU Y7, 224(DI)
	ADDQ $144, SI
	ADDQ $256, DI
	DECQ CX
	JNZ kloop
	VZEROUPPER
	RET

// NVFP4SCALE512(off) widens the FP8 codes in Z0's low bytes (one per lane) and
// stores s at off(DI) and −12·s at off+128(DI) (nvfp4ScalesAVX512); NVFP4SCALE2 the
// same in Y registers (nvfp4ScalesAVX2).
#define NVFP4SCALE512(off) \
	VPANDD Z29, Z0, Z1; \
	VPSLLD $20, Z1, Z1; \
	VPSLLD $24, Z0, Z2; \
	VPANDD Z28, Z2, Z2; \
	VPORD Z2, Z1, Z1; \
	VMULPS Z27, Z1, Z1; \
	VMULPS Z30, Z1, Z1; \
	VMOVUPS Z1, off(DI); \
	VMULPS Z26, Z1, Z1; \
	VMOVUPS Z1, off+128(DI)

#define NVFP4SCALE2(off) \
	VPAND Y13, Y0, Y1; \
	VPSLLD $20, Y1, Y1; \
	VPSLLD $24, Y0, Y2; \
	VPAND Y12, Y2, Y2; \
	VPOR Y2, Y1, Y1; \
	VMULPS Y11, Y1, Y1; \
	VMULPS Y14, Y1, Y1; \
	VMOVUPS Y1, off(DI); \
	VMULPS Y10, Y1, Y1; \
	VMOVUPS Y1, off+128(DI)

// func nvfp4ScalesAVX512(dst *float32, fp8 *byte, idx *int32, h *float32, quads int)
//
// nvfp4PanelScalesGo for 16 rows and groups 0…4·quads−1: four groups' FP8 codes of
// the 16 rows in one gather (row r's at fp8 + idx[r]), each code widened exactly —
// its magnitude bits shifted into a float32's exponent and mantissa (e4m3's bias 7
// against float32's 127: times 2¹²⁰, which also makes its subnormals normal) and its
// sign put back — then times the row's h: s, and −12·s beside it (dst[64g + r],
// dst[64g + 32 + r]).
TEXT ·nvfp4ScalesAVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ fp8+8(FP), SI
	MOVQ idx+16(FP), AX
	MOVQ h+24(FP), BX
	MOVQ quads+32(FP), CX
	VMOVDQU32 (AX), Z31
	VMOVUPS (BX), Z30
	MOVL $0x7f, AX
	VPBROADCASTD AX, Z29
	MOVL $0x80000000, AX
	VPBROADCASTD AX, Z28
	MOVL $0x7b800000, AX // 2^120
	VPBROADCASTD AX, Z27
	MOVL $0xc1400000, AX // −12
	VPBROADCASTD AX, Z26
s512loop:
	KXNORW K1, K1, K1
	VPGATHERDD (SI)(Z31*1), K1, Z0
	NVFP4SCALE512(0)
	VPSRLD $8, Z0, Z0
	NVFP4SCALE512(256)
	VPSRLD $8, Z0, Z0
	NVFP4SCALE512(512)
	VPSRLD $8, Z0, Z0
	NVFP4SCALE512(768)
	ADDQ $4, SI
	ADDQ $1024, DI
	DECQ CX
	JNZ s512loop
	VZEROUPPER
	RET

// func nvfp4ScalesAVX2(dst *float32, fp8 *byte, idx *int32, h *float32, quads int)
//
// nvfp4ScalesAVX512 for 8 rows (idx and h 8 each; dst[64g + r], dst[64g + 32 + r]).
TEXT ·nvfp4ScalesAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ fp8+8(FP), SI
	MOVQ idx+16(FP), AX
	MOVQ h+24(FP), BX
	MOVQ quads+32(FP), CX
	VMOVDQU (AX), Y15
	VMOVUPS (BX), Y14
	MOVL $0x7f, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x80000000, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	MOVL $0x7b800000, AX // 2^120
	VMOVD AX, X11
	VPBROADCASTD X11, Y11
	MOVL $0xc1400000, AX // −12
	VMOVD AX, X10
	VPBROADCASTD X10, Y10
s2loop:
	VPCMPEQD Y9, Y9, Y9
	VPGATHERDD Y9, (SI)(Y15*1), Y0
	NVFP4SCALE2(0)
	VPSRLD $8, Y0, Y0
	NVFP4SCALE2(256)
	VPSRLD $8, Y0, Y0
	NVFP4SCALE2(512)
	VPSRLD $8, Y0, Y0
	NVFP4SCALE2(768)
	ADDQ $4, SI
	ADDQ $1024, DI
	DECQ CX
	JNZ s2loop
	VZEROUPPER
	RET
