//go:build !noasm

#include "textflag.h"

// func scaleRowAVX2(dst, x, w *float32, n int, s float32)
// dst[i] = (x[i]·s)·w[i] for n (a positive multiple of 8) values.
TEXT ·scaleRowAVX2(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS s+32(FP), Y1
	XORQ AX, AX
rowloop:
	VMULPS (SI)(AX*4), Y1, Y0
	VMULPS (DX)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT  rowloop
	VZEROUPPER
	RET

// func scaleToAVX2(dst, x *float32, n int, s float32)
// dst[i] = x[i]·s for n (a positive multiple of 8) values.
TEXT ·scaleToAVX2(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS s+24(FP), Y1
	XORQ AX, AX
toloop:
	VMULPS (SI)(AX*4), Y1, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT  toloop
	VZEROUPPER
	RET
