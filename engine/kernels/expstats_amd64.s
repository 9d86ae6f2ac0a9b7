//go:build !noasm

#include "textflag.h"

// func expMomentsAVX2(e, x *float32, n int, m, inv float64, floor float32) (sum, moment float64)
// Four values a step: e < floor → 0 (stored back); sum += e; moment += (e·(x − m))·inv,
// in float64 lanes.
TEXT ·expMomentsAVX2(SB), NOSPLIT, $0-64
	MOVQ e+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD m+24(FP), Y6
	VBROADCASTSD inv+32(FP), Y7
	VBROADCASTSS floor+40(FP), X5
	VXORPD Y0, Y0, Y0 // sum
	VXORPD Y1, Y1, Y1 // moment
	XORQ AX, AX
momloop:
	VMOVUPS (DI)(AX*4), X2
	VCMPPS  $1, X5, X2, X3 // e < floor
	VANDNPS X2, X3, X2     // those set to 0
	VMOVUPS X2, (DI)(AX*4)
	VCVTPS2PD X2, Y2
	VADDPD  Y2, Y0, Y0
	VCVTPS2PD (SI)(AX*4), Y3
	VSUBPD  Y6, Y3, Y3
	VMULPD  Y3, Y2, Y3
	VMULPD  Y7, Y3, Y3
	VADDPD  Y3, Y1, Y1
	ADDQ $4, AX
	CMPQ AX, CX
	JLT  momloop
	VEXTRACTF128 $1, Y0, X2
	VADDPD  X2, X0, X0
	VHADDPD X0, X0, X0
	VEXTRACTF128 $1, Y1, X3
	VADDPD  X3, X1, X1
	VHADDPD X1, X1, X1
	VMOVSD X0, sum+48(FP)
	VMOVSD X1, moment+56(FP)
	VZEROUPPER
	RET
