package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Quantize encodes x (a whole number of blocks) as type t with simple round-to-nearest
// quantizers modelled on ggml's quantize_row_*_ref (no importance weighting or scale
// search). It exists to write GGUF files for tests and tools; files from llama.cpp
// use better (slower) quantizers, and the dequantizers read either.
func Quantize(t Type, x []float32) ([]byte, error) {
	info, ok := t.info()
	if !ok {
		return nil, fmt.Errorf("unknown ggml type %d", uint32(t))
	}
	if len(x)%info.blockSize != 0 {
		return nil, fmt.Errorf("%s: %d values are not whole blocks of %d", t, len(x), info.blockSize)
	}
	out := make([]byte, len(x)/info.blockSize*info.typeSize)
	nb := len(x) / info.blockSize
	for b := 0; b < nb; b++ {
		blk, v := out[b*info.typeSize:(b+1)*info.typeSize], x[b*info.blockSize:(b+1)*info.blockSize]
		switch t {
		case F32:
			binary.LittleEndian.PutUint32(blk, math.Float32bits(v[0]))
		case F16:
			binary.LittleEndian.PutUint16(blk, Float32ToHalf(v[0]))
		case BF16:
			binary.LittleEndian.PutUint16(blk, Float32ToBF16(v[0]))
		case Q8_0:
			quantQ8_0(blk, v)
		case Q4_0:
			quantQ4_0(blk, v)
		case Q4_1:
			quantQ4_1(blk, v)
		case Q5_0:
			quantQ5_0(blk, v)
		case Q5_1:
			quantQ5_1(blk, v)
		case Q4_K:
			quantK(blk, v, 15)
		case Q5_K:
			quantK(blk, v, 31)
		case Q6_K:
			quantQ6_K(blk, v)
		case Q2_K:
			quantQ2_K(blk, v)
		case Q3_K:
			quantQ3_K(blk, v)
		case IQ4_NL:
			quantIQ4_NL(blk, v)
		case IQ4_XS:
			quantIQ4_XS(blk, v)
		default:
			return nil, fmt.Errorf("quantizing to %s is not supported", t)
		}
	}
	return out, nil
}

// Float32ToHalf rounds f to IEEE binary16 (nearest, ties to even).
func Float32ToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	if f != f {
		return sign | 0x7e00
	}
	exp := int(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case exp >= 31:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint(14 - exp)
		h := mant >> shift
		rem, half := mant&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry into the exponent is the correct rounding (up to Inf)
	}
	return sign | uint16(h)
}

// Float32ToBF16 rounds f to bfloat16 (nearest, ties to even).
func Float32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if f != f {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

func putHalf(b []byte, f float32) float32 {
	h := Float32ToHalf(f)
	binary.LittleEndian.PutUint16(b, h)
	return HalfToFloat32(h)
}

func nearest(f float32) int { return int(math.RoundToEven(float64(f))) }

// absMax returns the value of largest magnitude (signed) and its magnitude.
func absMax(x []float32) (signed, amax float32) {
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, signed = a, v
		}
	}
	return
}

func quantQ8_0(blk []byte, x []float32) {
	_, amax := absMax(x)
	d := putHalf(blk, amax/127)
	for j, v := range x {
		q := 0
		if d != 0 {
			q = max(-127, min(127, nearest(v/d)))
		}
		blk[2+j] = byte(int8(q))
	}
}

func quantQ4_0(blk []byte, x []float32) {
	m, _ := absMax(x)
	d := putHalf(blk, m/-8)
	qs := blk[2:18]
	q := func(v float32) byte {
		if d == 0 {
			return 8
		}
		return byte(max(0, min(15, nearest(v/d)+8)))
	}
	for j := 0; j < 16; j++ {
		qs[j] = q(x[j]) | q(x[j+16])<<4
	}
}

func minMax(x []float32) (lo, hi float32) {
	lo, hi = x[0], x[0]
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	return
}

func quantQ4_1(blk []byte, x []float32) {
	lo, hi := minMax(x)
	d := putHalf(blk, (hi-lo)/15)
	m := putHalf(blk[2:], lo)
	qs := blk[4:20]
	q := func(v float32) byte {
		if d == 0 {
			return 0
		}
		return byte(max(0, min(15, nearest((v-m)/d))))
	}
	for j := 0; j < 16; j++ {
		qs[j] = q(x[j]) | q(x[j+16])<<4
	}
}

func quant5(blk []byte, x []float32, d, m float32, off int) {
	var qh uint32
	q := func(v float32) int {
		if d == 0 {
			return off
		}
		return max(0, min(31, nearest((v-m)/d)+off))
	}
	qs := blk[len(blk)-16:]
	for j := 0; j < 16; j++ {
		a, b := q(x[j]), q(x[j+16])
		qs[j] = byte(a&0xF) | byte(b&0xF)<<4
		qh |= uint32(a>>4&1)<<uint(j) | uint32(b>>4&1)<<uint(j+16)
	}
	binary.LittleEndian.PutUint32(blk[len(blk)-20:], qh)
}

func quantQ5_0(blk []byte, x []float32) {
	mx, _ := absMax(x)
	d := putHalf(blk, mx/-16)
	quant5(blk, x, d, 0, 16)
}

func quantQ5_1(blk []byte, x []float32) {
	lo, hi := minMax(x)
	d := putHalf(blk, (hi-lo)/31)
	m := putHalf(blk[2:], lo)
	quant5(blk, x, d, m, 0)
}

// quantK writes a Q4_K (nmax 15) or Q5_K (nmax 31) block: per sub-block of 32 a
// scale and a min (w ≈ s·q − m, q ∈ [0, nmax]) stored as 6-bit multiples of the
// block's d and dmin.
func quantK(blk []byte, x []float32, nmax int) {
	var scales, mins [8]float32
	var maxScale, maxMin float32
	for j := 0; j < 8; j++ {
		lo, hi := minMax(x[32*j : 32*j+32])
		lo = min(lo, 0)
		scales[j], mins[j] = (hi-lo)/float32(nmax), -lo
		maxScale, maxMin = max(maxScale, scales[j]), max(maxMin, mins[j])
	}
	d := putHalf(blk, maxScale/63)
	dmin := putHalf(blk[2:], maxMin/63)
	sc := blk[4:16]
	clear(sc)
	var ls, lm [8]int
	for j := 0; j < 8; j++ {
		if d > 0 {
			ls[j] = max(0, min(63, nearest(scales[j]/d)))
		}
		if dmin > 0 {
			lm[j] = max(0, min(63, nearest(mins[j]/dmin)))
		}
		if j < 4 {
			sc[j] |= byte(ls[j])
			sc[j+4] |= byte(lm[j])
		} else {
			sc[j+4] = byte(ls[j]&0xF) | byte(lm[j]&0xF)<<4
			sc[j-4] |= byte(ls[j]>>4) << 6
			sc[j] |= byte(lm[j]>>4) << 6
		}
	}
	var L [QK_K]int
	for j := 0; j < 8; j++ {
		de, dm := d*float32(ls[j]), dmin*float32(lm[j])
		for i := 0; i < 32; i++ {
			if de != 0 {
				L[32*j+i] = max(0, min(nmax, nearest((x[32*j+i]+dm)/de)))
			}
		}
	}
	if nmax == 15 {
		qs := blk[16:144]
		for j := 0; j < QK_K; j += 64 {
			for l := 0; l < 32; l++ {
				qs[j/2+l] = byte(L[j+l]) | byte(L[j+l+32])<<4
			}
		}
		return
	}
	qh, ql := blk[16:48], blk[48:176]
	clear(qh)
	m1, m2 := byte(1), byte(2)
	for n := 0; n < QK_K; n += 64 {
		for j := 0; j < 32; j++ {
			l1, l2 := L[n+j], L[n+j+32]
			if l1 > 15 {
				l1 -= 16
				qh[j] |= m1
			}
			if l2 > 15 {
				l2 -= 16
				qh[j] |= m2
			}
			ql[n/2+j] = byte(l1) | byte(l2)<<4
		}
		m1 <<= 2
		m2 <<= 2
	}
}

// quantQ6_K writes a Q6_K block: per sub-block of 16 a signed 8-bit scale (multiple
// of d), values (q − 32)·d·scale with q ∈ [0, 63].
func quantQ6_K(blk []byte, x []float32) {
	var scales [16]float32
	var maxScale, amaxScale float32
	for j := 0; j < 16; j++ {
		m, _ := absMax(x[16*j : 16*j+16])
		scales[j] = m / -32
		if a := float32(math.Abs(float64(scales[j]))); a > amaxScale {
			amaxScale, maxScale = a, scales[j]
		}
	}
	ql, qh, sc := blk[0:128], blk[128:192], blk[192:208]
	clear(ql)
	clear(qh)
	var L [QK_K]int
	if amaxScale == 0 {
		clear(sc)
		putHalf(blk[208:], 0)
		for i := range L {
			L[i] = 32
		}
	} else {
		iscale := -128 / maxScale
		d := putHalf(blk[208:], 1/iscale)
		for j := 0; j < 16; j++ {
			s := max(-128, min(127, nearest(iscale*scales[j])))
			sc[j] = byte(int8(s))
			de := d * float32(s)
			for i := 0; i < 16; i++ {
				l := 0
				if de != 0 {
					l = max(-32, min(31, nearest(x[16*j+i]/de)))
				}
				L[16*j+i] = l + 32
			}
		}
	}
	for j := 0; j < QK_K; j += 128 {
		for l := 0; l < 32; l++ {
			q1, q2, q3, q4 := L[j+l]&0xF, L[j+l+32]&0xF, L[j+l+64]&0xF, L[j+l+96]&0xF
			ql[j/2+l] = byte(q1 | q3<<4)
			ql[j/2+l+32] = byte(q2 | q4<<4)
			qh[j/4+l] = byte(L[j+l]>>4 | (L[j+l+32]>>4)<<2 | (L[j+l+64]>>4)<<4 | (L[j+l+96]>>4)<<6)
		}
	}
}

// quantQ2_K encodes one Q2_K block: each sub-block of 16 its range [min(lo, 0), hi]
// in four steps, its scale and minimum 4-bit multiples of the block's d and dmin.
func quantQ2_K(blk []byte, x []float32) {
	var scales, mins [16]float32
	var maxScale, maxMin float32
	for j := range 16 {
		lo, hi := minMax(x[16*j : 16*j+16])
		lo = min(lo, 0)
		scales[j], mins[j] = (hi-lo)/3, -lo
		maxScale, maxMin = max(maxScale, scales[j]), max(maxMin, mins[j])
	}
	d := putHalf(blk[80:], maxScale/15)
	dmin := putHalf(blk[82:], maxMin/15)
	var L [QK_K]int
	for j := range 16 {
		ls, lm := 0, 0
		if d > 0 {
			ls = max(0, min(15, nearest(scales[j]/d)))
		}
		if dmin > 0 {
			lm = max(0, min(15, nearest(mins[j]/dmin)))
		}
		blk[j] = byte(ls | lm<<4)
		de, dm := d*float32(ls), dmin*float32(lm)
		for i := range 16 {
			if de != 0 {
				L[16*j+i] = max(0, min(3, nearest((x[16*j+i]+dm)/de)))
			}
		}
	}
	packTwoBits(blk[16:80], &L)
}

// packTwoBits packs Q2_K's and Q3_K's 2-bit codes: byte n/4+l of each 128 elements
// from n holds elements n+l, n+32+l, n+64+l and n+96+l.
func packTwoBits(qs []byte, L *[QK_K]int) {
	for n := 0; n < QK_K; n += 128 {
		for l := range 32 {
			qs[n/4+l] = byte(L[n+l]&3 | (L[n+l+32]&3)<<2 | (L[n+l+64]&3)<<4 | (L[n+l+96]&3)<<6)
		}
	}
}

// quantQ3_K encodes one Q3_K block as ggml's quantize_row_q3_K_ref lays it out: each
// sub-block of 16 a signed scale putting its largest magnitude at −4, the scales
// 6-bit multiples of d (stored + 32), each code q+4 in 0…7, its bit 2 in hmask.
func quantQ3_K(blk []byte, x []float32) {
	clear(blk)
	var scales [16]float32
	var maxScale, amaxScale float32
	for j := range 16 {
		m, _ := absMax(x[16*j : 16*j+16])
		scales[j] = m / -4
		if a := float32(math.Abs(float64(scales[j]))); a > amaxScale {
			amaxScale, maxScale = a, scales[j]
		}
	}
	var L [QK_K]int
	for i := range L {
		L[i] = 4
	}
	if amaxScale > 0 {
		iscale := -32 / maxScale
		d := putHalf(blk[108:], 1/iscale)
		sc := blk[96:108]
		for j := range 16 {
			l := max(-32, min(31, nearest(iscale*scales[j])))
			de := d * float32(l)
			u := l + 32
			if j < 8 {
				sc[j] = byte(u & 0xF)
			} else {
				sc[j-8] |= byte(u&0xF) << 4
			}
			sc[8+j%4] |= byte(u>>4) << (2 * (j / 4))
			for i := range 16 {
				if de != 0 {
					L[16*j+i] = max(-4, min(3, nearest(x[16*j+i]/de))) + 4
				}
			}
		}
	} // else d = 0: every value 0
	hm := blk[0:32]
	for e := range L {
		if L[e] > 3 {
			hm[e%32] |= 1 << (e / 32)
			L[e] -= 4
		}
	}
	packTwoBits(blk[32:96], &L)
}

// nearestIQ4 is the index of the kvaluesIQ4NL level nearest v.
func nearestIQ4(v float32) byte {
	best, bd := 0, float32(math.Inf(1))
	for i, k := range kvaluesIQ4NL {
		if d := float32(math.Abs(float64(v - float32(k)))); d < bd {
			best, bd = i, d
		}
	}
	return byte(best)
}

// quantIQ4 writes 32 values x as IQ4_NL's 16 nibble bytes at scale d (0: all the level
// nearest zero).
func quantIQ4(qs []byte, x []float32, d float32) {
	for j := range 16 {
		var lo, hi byte = 8, 8 // kvalues[8] = 1, the level nearest 0
		if d != 0 {
			lo, hi = nearestIQ4(x[j]/d), nearestIQ4(x[j+16]/d)
		}
		qs[j] = lo | hi<<4
	}
}

// quantIQ4_NL encodes one IQ4_NL block: d puts the largest magnitude at ±127.
func quantIQ4_NL(blk []byte, x []float32) {
	_, amax := absMax(x)
	d := putHalf(blk, amax/127)
	quantIQ4(blk[2:18], x, d)
}

// quantIQ4_XS encodes one IQ4_XS block: each group's scale amax/127 a 6-bit multiple
// of the block's d, stored + 32.
func quantIQ4_XS(blk []byte, x []float32) {
	clear(blk)
	var scales [8]float32
	var maxScale float32
	for g := range 8 {
		_, amax := absMax(x[32*g : 32*g+32])
		scales[g] = amax / 127
		maxScale = max(maxScale, scales[g])
	}
	d := putHalf(blk, maxScale/31)
	var sh uint16
	for g := range 8 {
		l := 0
		if d > 0 {
			l = max(-32, min(31, nearest(scales[g]/d)))
		}
		u := l + 32
		blk[4+g/2] |= byte(u&0xF) << (4 * (g % 2))
		sh |= uint16(u>>4) << (2 * g)
		quantIQ4(blk[8+16*g:8+16*g+16], x[32*g:32*g+32], d*float32(l))
	}
	binary.LittleEndian.PutUint16(blk[2:], sh)
}
