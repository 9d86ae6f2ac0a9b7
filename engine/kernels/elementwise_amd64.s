//go:build !noasm

#include "textflag.h"

// func addAVX2(dst, x *float32, n int)
// dst[i] += x[i] for n (a positive multiple of 8) values.
TEXT ·addAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX
addloop:
	VMOVUPS (DI)(AX*4), Y0
	VADDPS (SI)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT  addloop
	VZEROUPPER
	RET
