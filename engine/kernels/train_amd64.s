//go:build !noasm

#include "textflag.h"

// func copyRows512(dst, src *float32, ld, rows, w int)
// dst[r·w + j] = src[r·ld + j] for r < rows, j < w ≤ 32: each row one or two masked
// 16-float moves (K1 the first min(w, 16) lanes, K2 the next w − 16).
TEXT ·copyRows512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), R8
	SHLQ $2, R8
	MOVQ w+32(FP), BX
	MOVQ BX, CX
	CMPQ CX, $16
	JLE  lo
	MOVQ $16, CX
lo:
	MOVQ $1, DX
	SHLQ CX, DX
	DECQ DX
	KMOVW DX, K1
	MOVQ BX, CX
	SUBQ $16, CX
	JG   hi
	XORQ CX, CX
hi:
	MOVQ $1, DX
	SHLQ CX, DX
	DECQ DX
	KMOVW DX, K2
	SHLQ $2, BX
	MOVQ rows+24(FP), CX
	TESTQ CX, CX
	JLE  done
loop:
	VMOVUPS (SI), K1, Z0
	VMOVUPS 64(SI), K2, Z1
	VMOVUPS Z0, K1, (DI)
	VMOVUPS Z1, K2, 64(DI)
	ADDQ R8, SI
	ADDQ BX, DI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET
