package main

import (
	"fmt"
	"math"
)

// The AR step's fused dot products (dotrows_amd64.s): rows of stored weights dotted
// with one float32 vector x without writing the decoded values, several weight rows
// at a time — int4 with AVX-512, int8 with AVX2. Each row keeps dotAVX2's 32 accumulator lanes — lane c sums
// value c of every 32 in order, with one FMA per value — and its final sum, so a row's
// result is bit for bit dotAVX2's on the decoded row. A lane's sum is a chain of FMAs
// (4 cycles each), so one row runs at 32 values per 4 cycles however wide the
// vectors; the rows of a call are independent chains, which is why a call takes more
// than one.

// dotRows is the number of weight rows a multi-row dot kernel interleaves.
var dotRows = []int{1, 2}

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
	for _, r := range dotRows {
		p("")
		emitDotInt8(p, r)
	}
	for _, r := range dotRows {
		p("")
		emitDotInt4(p, r)
	}
}

// floatHex is f's bits as an assembler constant.
func floatHex(f float32) string {
	return fmt.Sprintf("0x%08x", math.Float32bits(f))
}

// emitDotInt8 writes dotInt8xRAVX2: rows of int8 codes (stride bytes apart) dotted
// with x, value i of row j being float32(code)·scale, the scale read at
// scales + j·sstride + (i/32)·step bytes (step 0: one scale per row; 4: one per 32
// values). These stay AVX2: on the machine they were measured on (Zen 4, whose
// AVX-512 splits each zmm operation into two ymm halves) a zmm version ran 20% slower,
// its sign extensions costing more than they saved.
func emitDotInt8(p func(string, ...any), rows int) {
	if rows > 2 {
		panic("genkernels: dotInt8 addresses two rows")
	}
	name := fmt.Sprintf("dotInt8x%dAVX2", rows)
	label := func(s string) string { return fmt.Sprintf("%s_%s", name, s) }
	code := []string{"(SI)", "(SI)(R11*1)"}
	scale := []string{"(DX)", "(DX)(R8*1)"}
	acc := func(j, v int) int { return 4*j + v }
	p("// func %s(x *float32, codes *byte, stride, n int, scales *float32, sstride, step int, out *float32)", name)
	p("// %s of n values (a positive multiple of 32), stride bytes apart, dotted with x:", rowsWord(rows, "int8 row"))
	p("// out[j] is dotAVX2 of x with row j's float32(code)·scale, bit for bit (the same")
	p("// accumulators, order and final sum), the scale of its values 32c … 32c+31 at")
	p("// scales + j·sstride + c·step bytes.")
	p("TEXT ·%s(SB), NOSPLIT, $0-64", name)
	p("\tMOVQ x+0(FP), DI")
	p("\tMOVQ codes+8(FP), SI")
	p("\tMOVQ stride+16(FP), R11")
	p("\tMOVQ n+24(FP), CX")
	p("\tMOVQ scales+32(FP), DX")
	p("\tMOVQ sstride+40(FP), R8")
	p("\tMOVQ step+48(FP), R10")
	p("\tMOVQ out+56(FP), R9")
	for j := range rows {
		for v := range 4 {
			p("\tVXORPS Y%d, Y%d, Y%d", acc(j, v), acc(j, v), acc(j, v))
		}
	}
	p("%s:", label("loop"))
	for j := range rows {
		sc := 12 + j
		p("\tVBROADCASTSS %s, Y%d", scale[j], sc)
		for v := range 4 {
			p("\tVPMOVSXBD %d%s, Y%d", 8*v, code[j], 8+v)
		}
		for v := range 4 {
			p("\tVCVTDQ2PS Y%d, Y%d", 8+v, 8+v)
		}
		for v := range 4 {
			p("\tVMULPS Y%d, Y%d, Y%d", sc, 8+v, 8+v)
		}
		for v := range 4 {
			p("\tVFMADD231PS %d(DI), Y%d, Y%d", 32*v, 8+v, acc(j, v))
		}
	}
	p("\tADDQ $32, SI")
	p("\tADDQ $128, DI")
	p("\tADDQ R10, DX")
	p("\tSUBQ $32, CX")
	p("\tJNZ %s", label("loop"))
	for j := range rows {
		// dotAVX2's (Y0 + Y1) + (Y2 + Y3), then its horizontal sum.
		a0, a1, a2, a3 := acc(j, 0), acc(j, 1), acc(j, 2), acc(j, 3)
		p("\tVADDPS Y%d, Y%d, Y%d", a1, a0, a0)
		p("\tVADDPS Y%d, Y%d, Y%d", a3, a2, a2)
		p("\tVADDPS Y%d, Y%d, Y%d", a2, a0, a0)
		emitHSum(p, a0, 4*j)
	}
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

// emitHSum ends dotAVX2: the 8 lanes of Y(r) summed as it sums them, stored at off(R9).
func emitHSum(p func(string, ...any), r, off int) {
	p("\tVEXTRACTF128 $1, Y%d, X8", r)
	p("\tVADDPS X8, X%d, X%d", r, r)
	p("\tVHADDPS X%d, X%d, X%d", r, r, r)
	p("\tVHADDPS X%d, X%d, X%d", r, r, r)
	p("\tMOVSS X%d, %d(R9)", r, off)
}

// emitDotInt4 writes dotInt4xRAVX512: rows of Darkroom's int4 in groups of 32 (16 code
// bytes each, value 2i the low nibble of byte i) dotted with x permuted by
// permuteInt4X512 (per group the even values, then the odd ones).
func emitDotInt4(p func(string, ...any), rows int) {
	name := fmt.Sprintf("dotInt4x%dAVX512", rows)
	label := func(s string) string { return fmt.Sprintf("%s_%s", name, s) }
	// Row j's pointers: codes, scales, minimums (registers for two rows).
	if rows > 2 {
		panic("genkernels: dotInt4 has pointer registers for 2 rows")
	}
	code := func(j int) string { return []string{"SI", "R12"}[j] }
	scale := func(j int) string { return []string{"DX", "AX"}[j] }
	minReg := func(j int) string { return []string{"R10", "BX"}[j] }
	p("// func %s(x *float32, codes *byte, stride, groups int, scales, mins *float32, affine bool, out *float32)", name)
	p("// %s of int4 groups of 32 (16 code bytes each, stride bytes apart) dotted", rowsWord(rows, "row"))
	p("// with x permuted by permuteInt4X512. Row j's scales are scales[j·groups …], its")
	p("// minimums mins[j·groups …] (read only when affine). A group's 16 values are")
	p("// dotq4table's row times its scale (plus its minimum: decodeInt4Runs's arithmetic),")
	p("// looked up by nibble with VPERMPS. Z(2j) sums the even values of row j, lane l value")
	p("// 2l of each group; Z(2j+1) the odd ones; they are put in dotAVX2's places before its")
	p("// final sum, so out[j] is bit for bit dotAVX2 of x with the decoded row.")
	p("TEXT ·%s(SB), NOSPLIT, $0-64", name)
	p("\tMOVQ x+0(FP), DI")
	p("\tMOVQ codes+8(FP), SI")
	p("\tMOVQ stride+16(FP), R11")
	p("\tMOVQ groups+24(FP), CX")
	p("\tMOVQ scales+32(FP), DX")
	p("\tMOVQ mins+40(FP), R10")
	p("\tMOVQ out+56(FP), R9")
	p("\tMOVQ CX, R8")
	p("\tSHLQ $2, R8 // bytes of one row's scales")
	for j := 1; j < rows; j++ {
		p("\tLEAQ (%s)(R11*1), %s", code(j-1), code(j))
		p("\tLEAQ (%s)(R8*1), %s", scale(j-1), scale(j))
		p("\tLEAQ (%s)(R8*1), %s", minReg(j-1), minReg(j))
	}
	for j := range 2 * rows {
		p("\tVPXORD Z%d, Z%d, Z%d", j, j, j)
	}
	p("\tCMPB affine+48(FP), $0")
	p("\tJNE %s", label("affine"))
	p("\tVMOVUPS dotq4table<>+0(SB), Z30")
	emitInt4Loop(p, rows, label("sym"), false, code, scale, minReg)
	p("\tJMP %s", label("sum"))
	p("%s:", label("affine"))
	p("\tVMOVUPS dotq4table<>+64(SB), Z30")
	emitInt4Loop(p, rows, label("aff"), true, code, scale, minReg)
	p("%s:", label("sum"))
	for j := range rows {
		e, o := 2*j, 2*j+1
		// Interleaved, 128-bit lane i of L holds values 8i…8i+3 and of H 8i+4…8i+7:
		// dotAVX2's Y(i) is [L(i), H(i)]. Its (Y0 + Y1) + (Y2 + Y3) pairs the same lanes.
		p("\tVUNPCKLPS Z%d, Z%d, Z16", o, e)
		p("\tVUNPCKHPS Z%d, Z%d, Z17", o, e)
		p("\tVSHUFF32X4 $0x88, Z17, Z16, Z18 // L0 L2 H0 H2")
		p("\tVSHUFF32X4 $0xdd, Z17, Z16, Z19 // L1 L3 H1 H3")
		p("\tVADDPS Z19, Z18, Z18")
		p("\tVSHUFF32X4 $0xd8, Z18, Z18, Z%d // Y0+Y1 | Y2+Y3", e)
		p("\tVEXTRACTF64X4 $1, Z%d, Y9", e)
		p("\tVADDPS Y9, Y%d, Y%d", e, e)
		emitHSum(p, e, 4*j)
	}
	p("\tVZEROUPPER")
	p("\tRET")
}

func emitInt4Loop(p func(string, ...any), rows int, label string, affine bool, code, scale, minReg func(int) string) {
	p("%s:", label)
	for j := range rows {
		t, lo, hi := 8+3*j, 9+3*j, 10+3*j
		p("\tVMULPS.BCST (%s), Z30, Z%d", scale(j), t)
		if affine {
			p("\tVADDPS.BCST (%s), Z%d, Z%d", minReg(j), t, t)
		}
		p("\tVPMOVZXBD (%s), Z%d", code(j), lo)
		p("\tVPSRLD $4, Z%d, Z%d", lo, hi)
		p("\tVPERMPS Z%d, Z%d, Z%d", t, lo, lo)
		p("\tVPERMPS Z%d, Z%d, Z%d", t, hi, hi)
		p("\tVFMADD231PS (DI), Z%d, Z%d", lo, 2*j)
		p("\tVFMADD231PS 64(DI), Z%d, Z%d", hi, 2*j+1)
	}
	for j := range rows {
		p("\tADDQ $16, %s", code(j))
		p("\tADDQ $4, %s", scale(j))
		if affine {
			p("\tADDQ $4, %s", minReg(j))
		}
	}
	p("\tADDQ $128, DI")
	p("\tDECQ CX")
	p("\tJNZ %s", label)
}
