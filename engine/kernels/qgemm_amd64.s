//go:build !noasm

#include "textflag.h"

// func quantizeRow32AVX512(q *int8, pairs *float32, a *float32, groups int)
//
// Per group of 32: the largest magnitude as the integer maximum of the values' bits
// without their signs (an infinity or a NaN above every finite value), then the
// codes rounded to nearest even (VCVTPS2DQ) and narrowed (VPMOVSDB), and the pair
// (amax/127, amax/127 · Σ codes): quantizeRow32Go's arithmetic.
TEXT ·quantizeRow32AVX512(SB), NOSPLIT, $0-32
	MOVQ q+0(FP), DI
	MOVQ pairs+8(FP), DX
	MOVQ a+16(FP), SI
	MOVQ groups+24(FP), CX
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z31
	MOVL $0x42fe0000, AX // 127.0
	VMOVD AX, X30
	VPXORD X29, X29, X29
qloop:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
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
	VPMOVSDB Z1, X7
	VMOVDQU X6, (DI)
	VMOVDQU X7, 16(DI)
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
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $8, DX
	DECQ CX
	JNZ qloop
	VZEROUPPER
	RET
qzero:
	VMOVDQU32 Y29, (DI)
	MOVQ $0, (DX)
	JMP qnext
qnonfinite:
	VMOVDQU32 Y29, (DI)
	MOVL $0x7fc00000, (DX)
	MOVL $0, 4(DX)
	JMP qnext

// func unpackNibblesAVX512(dst, src *byte, n int)
//
// 32 bytes of src at a time: each widened to a 16-bit word b, then (b | b<<4) &
// 0x0f0f puts its low nibble in the word's first byte and its high one in the second.
TEXT ·unpackNibblesAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $5, CX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
uloop:
	VPMOVZXBW (SI), Z0
	VPSLLW $4, Z0, Z1
	VPORD Z1, Z0, Z0
	VPANDD Z31, Z0, Z0
	VMOVDQU64 Z0, (DI)
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ uloop
	VZEROUPPER
	RET
