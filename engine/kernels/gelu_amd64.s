//go:build !noasm

#include "textflag.h"

DATA geluconst<>+0(SB)/4, $0.044715
DATA geluconst<>+4(SB)/4, $-1.5957691216057308
DATA geluconst<>+8(SB)/4, $1.0
GLOBL geluconst<>(SB), RODATA|NOPTR, $12

// func geluPreAVX2(tmp, gate *float32, n int)
// tmp[i] = c·(x + ((0.044715·x)·x)·x), c = −2√(2/π), in the scalar formula's order.
TEXT ·geluPreAVX2(SB), NOSPLIT, $0-24
	MOVQ tmp+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS geluconst<>+0(SB), Y2
	VBROADCASTSS geluconst<>+4(SB), Y3
	XORQ AX, AX
preloop:
	VMOVUPS (SI)(AX*4), Y0
	VMULPS  Y0, Y2, Y1
	VMULPS  Y0, Y1, Y1
	VMULPS  Y0, Y1, Y1
	VADDPS  Y1, Y0, Y1
	VMULPS  Y1, Y3, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT  preloop
	VZEROUPPER
	RET

// func geluPostAVX2(dst, gate, up, tmp *float32, n int)
// dst[i] = (gate[i] / (1 + tmp[i]))·up[i].
TEXT ·geluPostAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ up+16(FP), DX
	MOVQ tmp+24(FP), BX
	MOVQ n+32(FP), CX
	VBROADCASTSS geluconst<>+8(SB), Y3
	XORQ AX, AX
postloop:
	VADDPS  (BX)(AX*4), Y3, Y1
	VMOVUPS (SI)(AX*4), Y0
	VDIVPS  Y1, Y0, Y0
	VMULPS  (DX)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT  postloop
	VZEROUPPER
	RET
