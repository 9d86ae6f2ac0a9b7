package main

import (
	"fmt"
	"math"
)

// The AR step's fused dot products (dotrows_amd64.s): rows of stored weights dotted
// with one float32 vector x (or two or three) without writing the decoded values —
// int4 with AVX-512, two rows at a time; int8 with AVX2, and with AVX-512 one row at a
// time. Each row keeps dotAVX2's 32 accumulator lanes —
// lane c sums value c of every 32 in order, with one FMA per value — and its final
// sum, so a row's result is bit for bit dotAVX2's on the decoded row. A lane's sum is
// a chain of FMAs (4 cycles each), so one row runs at 32 values per 4 cycles however
// wide the vectors: int4, whose decoding is cheap enough to wait on that chain, takes
// two rows, two independent chains.

// The int4 kernels interleave two weight rows (a leftover row takes the one-row
// kernel), or take one weight row against two or three rows of x (int4Kernels). The
// int8 kernels take one row (int8Kernels): on Zen 4
// (where these were measured) two rows gain nothing in cache — the multiplies and FMAs
// already fill both FMA pipes — and stream from memory at 7 GB/s a core against one
// row's 18, the hardware prefetchers losing track of two streams a row apart.
// int4Prefetch is how far ahead (bytes) the int4 kernels prefetch each row's codes: it
// lifts two interleaved rows streamed from memory from 5.5 to 9 GB/s a core, one row
// from 7.3 to 9 (Zen 4; the int8 kernel, at 18 without, loses with it).
const int4Prefetch = 4096

// int4Unroll is the groups of 32 an int4 kernel's step takes per row: four, a cache
// line of codes.
const int4Unroll = 4

func emitDots(p func(string, ...any)) {
	p("// dotq4table holds float32(c − 8) for the codes c = 0…15 of symmetric int4, then")
	p("// float32(c) for affine int4: a group's values are this row times its scale (plus")
	p("// its minimum), looked up by nibble with VPERMPS.")
	for c := range 16 {
		p("DATA dotq4table<>+%d(SB)/4, $%s", 4*c, floatHex(float32(c-8)))
	}
	for c := range 16 {
		p("DATA dotq4table<>+%d(SB)/4, $%s", 64+4*c, floatHex(float32(c)))
	}
	p("GLOBL dotq4table<>(SB), RODATA|NOPTR, $128")
	p("")
	emitDotInt8(p)
	for _, kn := range int8Kernels {
		p("")
		emitDotInt8AVX512(p, kn)
	}
	for _, kn := range int4Kernels {
		p("")
		emitDotInt4(p, kn)
	}
}

// floatHex is f's bits as an assembler constant.
func floatHex(f float32) string {
	return fmt.Sprintf("0x%08x", math.Float32bits(f))
}

// emitDotInt8 writes dotInt8AVX2: a row of int8 codes dotted with x, value i being
// float32(code)·scale, the scale read at scales + (i/32)·step bytes (step 0: one scale
// per row; 4: one per 32 values): the CPUs without AVX-512's, whose products take
// emitDotInt8AVX512's kernels, the same bits.
func emitDotInt8(p func(string, ...any)) {
	const name = "dotInt8AVX2"
	p("// func %s(x *float32, codes *byte, n int, scales *float32, step int) float32", name)
	p("// dotAVX2 of x with n (a positive multiple of 32) values float32(code)·scale, widened")
	p("// in registers: the same accumulators in the same order and the same final sum, so")
	p("// the result is bit for bit dotAVX2's on the decoded values. Values 32c … 32c+31")
	p("// take the scale at scales + c·step bytes.")
	p("TEXT ·%s(SB), NOSPLIT, $0-44", name)
	p("\tMOVQ x+0(FP), DI")
	p("\tMOVQ codes+8(FP), SI")
	p("\tMOVQ n+16(FP), CX")
	p("\tMOVQ scales+24(FP), DX")
	p("\tMOVQ step+32(FP), R10")
	for v := range 4 {
		p("\tVXORPS Y%d, Y%d, Y%d", v, v, v)
	}
	p("%s_loop:", name)
	p("\tVBROADCASTSS (DX), Y12")
	for v := range 4 {
		p("\tVPMOVSXBD %d(SI), Y%d", 8*v, 8+v)
	}
	for v := range 4 {
		p("\tVCVTDQ2PS Y%d, Y%d", 8+v, 8+v)
	}
	for v := range 4 {
		p("\tVMULPS Y12, Y%d, Y%d", 8+v, 8+v)
	}
	for v := range 4 {
		p("\tVFMADD231PS %d(DI), Y%d, Y%d", 32*v, 8+v, v)
	}
	p("\tADDQ $32, SI")
	p("\tADDQ $128, DI")
	p("\tADDQ R10, DX")
	p("\tSUBQ $32, CX")
	p("\tJNZ %s_loop", name)
	// dotAVX2's (Y0 + Y1) + (Y2 + Y3), then its horizontal sum.
	p("\tVADDPS Y1, Y0, Y0")
	p("\tVADDPS Y3, Y2, Y2")
	p("\tVADDPS Y2, Y0, Y0")
	emitHSum(p, 0, "ret+40(FP)")
	p("\tVZEROUPPER")
	p("\tRET")
}

// rowsWord is "1 int8 row" or "2 int8 rows".
func rowsWord(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// emitHSum ends dotAVX2: the 8 lanes of Y(r) summed as it sums them, stored at dst.
func emitHSum(p func(string, ...any), r int, dst string) {
	p("\tVEXTRACTF128 $1, Y%d, X8", r)
	p("\tVADDPS X8, X%d, X%d", r, r)
	p("\tVHADDPS X%d, X%d, X%d", r, r, r)
	p("\tVHADDPS X%d, X%d, X%d", r, r, r)
	p("\tVMOVSS X%d, %s", r, dst)
}

// int4Kernel is one int4 kernel's shape: weight rows × rows of x, each pair with its
// own two accumulators (its own chains of FMAs). Several rows of x share each group's
// decoding.
type int4Kernel struct{ rows, xrows int }

var int4Kernels = []int4Kernel{{1, 1}, {2, 1}, {1, 2}, {1, 3}}

// emitDotInt4 writes dotInt4wRxMAVX512: R rows of Darkroom's int4 in groups of 32 (16
// code bytes each, value 2i the low nibble of byte i) dotted with M rows of x, each
// permuted by permuteInt4X (per group the even values, then the odd ones).
func emitDotInt4(p func(string, ...any), kn int4Kernel) {
	rows, xrows := kn.rows, kn.xrows
	if rows > 2 || xrows > 3 || rows > 1 && xrows > 1 {
		panic("genkernels: dotInt4 has registers for 2 weight rows or 3 rows of x")
	}
	name := fmt.Sprintf("dotInt4w%dx%dAVX512", rows, xrows)
	label := func(s string) string { return fmt.Sprintf("%s_%s", name, s) }
	// Row j's pointers: codes, scales, minimums; x row i at DI + i·R14, its outputs at
	// R9 + i·BX.
	code := func(j int) string { return []string{"SI", "R12"}[j] }
	scale := func(j int) string { return []string{"DX", "AX"}[j] }
	minReg := func(j int) string { return []string{"R10", "BX"}[j] }
	p("// func %s(x *float32, xstride int, codes *byte, stride, groups int, scales, mins *float32, affine bool, out *float32, ostride int)", name)
	p("// %s of int4 groups of 32 (16 code bytes each, stride bytes apart) dotted", rowsWord(rows, "row"))
	p("// with %s of x (xstride bytes apart) permuted by permuteInt4X. Row j's scales are", rowsWord(xrows, "row"))
	p("// scales[j·groups …], its minimums mins[j·groups …] (read only when affine). A")
	p("// group's 16 values are dotq4table's row times its scale (plus its minimum:")
	p("// decodeInt4Runs's arithmetic), looked up by nibble with VPERMPS, once for every row")
	p("// of x. Each pair of a weight row and a row of x sums the even values (lane l value 2l")
	p("// of each group) and the odd ones in two accumulators; they are put in dotAVX2's")
	p("// places before its final sum, so out[j + i·ostride/4] is bit for bit dotAVX2 of x's")
	p("// row i with the decoded row j.")
	p("TEXT ·%s(SB), NOSPLIT, $0-80", name)
	p("\tMOVQ x+0(FP), DI")
	p("\tMOVQ xstride+8(FP), R14")
	p("\tMOVQ codes+16(FP), SI")
	p("\tMOVQ stride+24(FP), R11")
	p("\tMOVQ groups+32(FP), CX")
	p("\tMOVQ scales+40(FP), DX")
	p("\tMOVQ mins+48(FP), R10")
	p("\tMOVQ out+64(FP), R9")
	if xrows > 1 { // BX holds row 1's minimums only with two weight rows
		p("\tMOVQ ostride+72(FP), BX")
	}
	p("\tMOVQ CX, R8")
	p("\tSHLQ $2, R8 // bytes of one row's scales")
	for j := 1; j < rows; j++ {
		p("\tLEAQ (%s)(R11*1), %s", code(j-1), code(j))
		p("\tLEAQ (%s)(R8*1), %s", scale(j-1), scale(j))
		p("\tLEAQ (%s)(R8*1), %s", minReg(j-1), minReg(j))
	}
	for a := range 2 * rows * xrows {
		p("\tVPXORD Z%d, Z%d, Z%d", a, a, a)
	}
	p("\tCMPB affine+56(FP), $0")
	p("\tJNE %s", label("affine"))
	p("\tVMOVUPS dotq4table<>+0(SB), Z30")
	emitInt4Loop(p, kn, label("sym"), false, code, scale, minReg)
	p("\tJMP %s", label("sum"))
	p("%s:", label("affine"))
	p("\tVMOVUPS dotq4table<>+64(SB), Z30")
	emitInt4Loop(p, kn, label("aff"), true, code, scale, minReg)
	p("%s:", label("sum"))
	for j := range rows {
		for i := range xrows {
			e := 2 * (j*xrows + i)
			o := e + 1
			// Interleaved, 128-bit lane i of L holds values 8i…8i+3 and of H 8i+4…8i+7:
			// dotAVX2's Y(i) is [L(i), H(i)]. Its (Y0 + Y1) + (Y2 + Y3) pairs the same
			// lanes.
			p("\tVUNPCKLPS Z%d, Z%d, Z16", o, e)
			p("\tVUNPCKHPS Z%d, Z%d, Z17", o, e)
			p("\tVSHUFF32X4 $0x88, Z17, Z16, Z18 // L0 L2 H0 H2")
			p("\tVSHUFF32X4 $0xdd, Z17, Z16, Z19 // L1 L3 H1 H3")
			p("\tVADDPS Z19, Z18, Z18")
			p("\tVSHUFF32X4 $0xd8, Z18, Z18, Z%d // Y0+Y1 | Y2+Y3", e)
			p("\tVEXTRACTF64X4 $1, Z%d, Y9", e)
			p("\tVADDPS Y9, Y%d, Y%d", e, e)
			emitHSum(p, e, fmt.Sprintf("%d%s", 4*j, xAddr("R9", "BX", i)))
		}
	}
	p("\tVZEROUPPER")
	p("\tRET")
}

// xAddr is the address of row i of a base register's rows, stride apart (i ≤ 2).
func xAddr(base, stride string, i int) string {
	if i == 0 {
		return "(" + base + ")"
	}
	return fmt.Sprintf("(%s)(%s*%d)", base, stride, i)
}

// emitInt4Loop writes the group loop: int4Unroll groups a step while that many are
// left (one prefetch per row and cache line), then one at a time; CX counts groups.
func emitInt4Loop(p func(string, ...any), kn int4Kernel, label string, affine bool, code, scale, minReg func(int) string) {
	const u = int4Unroll
	p("\tMOVQ CX, R13")
	p("\tANDQ $%d, R13 // groups after the unrolled steps", u-1)
	p("\tSHRQ $%d, CX", bitsOf(u))
	p("\tJZ %s_one", label)
	p("%s:", label)
	emitInt4Step(p, kn, affine, u, code, scale, minReg)
	p("\tDECQ CX")
	p("\tJNZ %s", label)
	p("%s_one:", label)
	p("\tTESTQ R13, R13")
	p("\tJZ %s_done", label)
	p("%s_onel:", label)
	emitInt4Step(p, kn, affine, 1, code, scale, minReg)
	p("\tDECQ R13")
	p("\tJNZ %s_onel", label)
	p("%s_done:", label)
}

// emitInt4Step writes g groups of each row, in group order (each accumulator's chain
// of FMAs stays in value order), and advances the pointers past them.
func emitInt4Step(p func(string, ...any), kn int4Kernel, affine bool, g int, code, scale, minReg func(int) string) {
	rows := kn.rows
	if g > 1 {
		for j := range rows {
			p("\tPREFETCHT0 %d(%s)", int4Prefetch, code(j))
		}
	}
	for q := range g {
		for j := range rows {
			t, lo, hi := 8+3*j, 9+3*j, 10+3*j
			p("\tVMULPS.BCST %d(%s), Z30, Z%d", 4*q, scale(j), t)
			if affine {
				p("\tVADDPS.BCST %d(%s), Z%d, Z%d", 4*q, minReg(j), t, t)
			}
			p("\tVPMOVZXBD %d(%s), Z%d", 16*q, code(j), lo)
			p("\tVPSRLD $4, Z%d, Z%d", lo, hi)
			p("\tVPERMPS Z%d, Z%d, Z%d", t, lo, lo)
			p("\tVPERMPS Z%d, Z%d, Z%d", t, hi, hi)
			for i := range kn.xrows {
				a := 2 * (j*kn.xrows + i)
				p("\tVFMADD231PS %d%s, Z%d, Z%d", 128*q, xAddr("DI", "R14", i), lo, a)
				p("\tVFMADD231PS %d%s, Z%d, Z%d", 128*q+64, xAddr("DI", "R14", i), hi, a+1)
			}
		}
	}
	for j := range rows {
		p("\tADDQ $%d, %s", 16*g, code(j))
		p("\tADDQ $%d, %s", 4*g, scale(j))
		if affine {
			p("\tADDQ $%d, %s", 4*g, minReg(j))
		}
	}
	p("\tADDQ $%d, DI", 128*g)
}

// bitsOf is log2 of a power of two.
func bitsOf(n int) int {
	b := 0
	for ; n > 1; n >>= 1 {
		b++
	}
	return b
}

// int8Kernels are the AVX-512 int8 kernels' rows of x, against one weight row: one (the
// AR step), or two or three (a product below dotRows rows), which share the row's
// decoding. None takes two weight rows: on Zen 4 (2 cores, measured at load 10, each
// kernel alone on a core) two rows against one x ran as fast as one in cache (22 GB/s of
// codes; the multiplies and FMAs fill both FMA pipes either way) and streamed from
// memory at 9–14 GB/s against one row's 16–18, with or without prefetching each row's
// codes 4 KiB or a row pair ahead.
var int8Kernels = []int{1, 2, 3}

// int8Unroll is the groups of 32 an int8 kernel's step takes: two, a cache line of
// codes (four measured the same).
const int8Unroll = 2

// emitDotInt8AVX512 writes dotInt8w1xMAVX512: a row of int8 codes dotted with M rows of
// x, dotInt8AVX2's arithmetic with its 32 lanes in two zmm accumulators per row of x.
func emitDotInt8AVX512(p func(string, ...any), xrows int) {
	if xrows > 3 {
		panic("genkernels: dotInt8 is written for up to 3 rows of x")
	}
	name := fmt.Sprintf("dotInt8w1x%dAVX512", xrows)
	label := func(s string) string { return fmt.Sprintf("%s_%s", name, s) }
	// The row's codes at SI, its scales at DX; x row i at DI + i·R14, its output at
	// R9 + i·BX.
	p("// func %s(x *float32, xstride int, codes *byte, n int, scales *float32, step int, out *float32, ostride int)", name)
	p("// dotInt8AVX2 of a row of n (a positive multiple of 32) int8 codes with %s", rowsWord(xrows, "row"))
	p("// of x (xstride bytes apart): value i is float32(code)·scale, the scale at scales +")
	p("// (i/32)·step bytes, widened, converted and scaled once for every row of x. Each row")
	p("// of x keeps dotAVX2's 32 lanes in two accumulators (values 0–15 and 16–31 of every")
	p("// 32, one FMA each, in order) and ends with dotAVX2's sum of its four vectors, so")
	p("// out[i·ostride/4] is bit for bit dotAVX2 of x's row i with the decoded row.")
	p("TEXT ·%s(SB), NOSPLIT, $0-64", name)
	p("\tMOVQ x+0(FP), DI")
	p("\tMOVQ xstride+8(FP), R14")
	p("\tMOVQ codes+16(FP), SI")
	p("\tMOVQ n+24(FP), CX")
	p("\tMOVQ scales+32(FP), DX")
	p("\tMOVQ step+40(FP), R10")
	p("\tMOVQ out+48(FP), R9")
	p("\tMOVQ ostride+56(FP), BX")
	for a := range 2 * xrows {
		p("\tVPXORD Z%d, Z%d, Z%d", a, a, a)
	}
	const u = int8Unroll
	p("\tSHRQ $5, CX // groups of 32")
	p("\tMOVQ CX, R13")
	p("\tANDQ $%d, R13 // groups after the unrolled steps", u-1)
	p("\tSHRQ $%d, CX", bitsOf(u))
	p("\tJZ %s", label("one"))
	p("%s:", label("loop"))
	emitInt8Step(p, xrows, u)
	p("\tDECQ CX")
	p("\tJNZ %s", label("loop"))
	p("%s:", label("one"))
	p("\tTESTQ R13, R13")
	p("\tJZ %s", label("sum"))
	p("%s:", label("onel"))
	emitInt8Step(p, xrows, 1)
	p("\tDECQ R13")
	p("\tJNZ %s", label("onel"))
	p("%s:", label("sum"))
	for i := range xrows {
		e, o := 2*i, 2*i+1
		// Z(e) is dotAVX2's [Y0, Y1], Z(o) its [Y2, Y3]: (Y0 + Y1) + (Y2 + Y3).
		p("\tVEXTRACTF64X4 $1, Z%d, Y12", e)
		p("\tVEXTRACTF64X4 $1, Z%d, Y13", o)
		p("\tVADDPS Y12, Y%d, Y%d", e, e)
		p("\tVADDPS Y13, Y%d, Y%d", o, o)
		p("\tVADDPS Y%d, Y%d, Y%d", o, e, e)
		emitHSum(p, e, xAddr("R9", "BX", i))
	}
	p("\tVZEROUPPER")
	p("\tRET")
}

// emitInt8Step writes g groups of 32 values, in order, and advances the pointers past
// them.
func emitInt8Step(p func(string, ...any), xrows, g int) {
	for q := range g {
		lo, hi := 8+2*q, 9+2*q
		p("\tVPMOVSXBD %d(SI), Z%d", 32*q, lo)
		p("\tVPMOVSXBD %d(SI), Z%d", 32*q+16, hi)
		p("\tVCVTDQ2PS Z%d, Z%d", lo, lo)
		p("\tVCVTDQ2PS Z%d, Z%d", hi, hi)
		p("\tVMULPS.BCST (DX), Z%d, Z%d", lo, lo)
		p("\tVMULPS.BCST (DX), Z%d, Z%d", hi, hi)
		p("\tADDQ R10, DX")
		for i := range xrows {
			p("\tVFMADD231PS %d%s, Z%d, Z%d", 128*q, xAddr("DI", "R14", i), lo, 2*i)
			p("\tVFMADD231PS %d%s, Z%d, Z%d", 128*q+64, xAddr("DI", "R14", i), hi, 2*i+1)
		}
	}
	p("\tADDQ $%d, SI", 32*g)
	p("\tADDQ $%d, DI", 128*g)
}
