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

// func rmsNormRowsAVX2(dst, x, w *float32, rows, n int, eps float32)
// RMSNorm of rows rows of n values each (n a positive multiple of 32), as RMSNorm's
// loop computes a row: ms = Σ x² in dotAVX2's lanes and order, r =
// float32(1/√float64(ms/float32(n) + eps)), dst = (x·r)·w as scaleRowAVX2 (w nil:
// x·r as scaleToAVX2). dst may be x.
TEXT ·rmsNormRowsAVX2(SB), NOSPLIT, $0-44
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ rows+24(FP), R8
	MOVQ n+32(FP), CX
	VMOVSS eps+40(FP), X8
	VCVTSI2SSQ CX, X9, X9                // float32(n)
	MOVQ $0x3FF0000000000000, AX    // 1.0
	VMOVQ AX, X10
	MOVQ CX, BX
	SHLQ $2, BX                     // a row's bytes
normrow:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ SI, R9
	MOVQ CX, R10
normdot:
	VMOVUPS (R9), Y4
	VMOVUPS 32(R9), Y5
	VMOVUPS 64(R9), Y6
	VMOVUPS 96(R9), Y7
	VFMADD231PS Y4, Y4, Y0
	VFMADD231PS Y5, Y5, Y1
	VFMADD231PS Y6, Y6, Y2
	VFMADD231PS Y7, Y7, Y3
	ADDQ $128, R9
	SUBQ $32, R10
	JNZ  normdot
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VDIVSS X9, X0, X0               // ms/float32(n)
	VADDSS X8, X0, X0               // + eps
	VCVTSS2SD X0, X0, X0
	VSQRTSD X0, X0, X0
	VDIVSD X0, X10, X0              // 1/√…
	VCVTSD2SS X0, X0, X0
	VBROADCASTSS X0, Y5
	MOVQ SI, R9
	MOVQ DI, R11
	MOVQ DX, R12
	MOVQ CX, R10
	TESTQ DX, DX
	JZ   normto
normscale:
	VMULPS (R9), Y5, Y6
	VMULPS (R12), Y6, Y6
	VMOVUPS Y6, (R11)
	ADDQ $32, R9
	ADDQ $32, R11
	ADDQ $32, R12
	SUBQ $8, R10
	JNZ  normscale
	JMP  normnext
normto:
	VMULPS (R9), Y5, Y6
	VMOVUPS Y6, (R11)
	ADDQ $32, R9
	ADDQ $32, R11
	SUBQ $8, R10
	JNZ  normto
normnext:
	ADDQ BX, SI
	ADDQ BX, DI
	DECQ R8
	JNZ  normrow
	VZEROUPPER
	RET
