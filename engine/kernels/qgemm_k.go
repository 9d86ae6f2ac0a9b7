package kernels

import (
	"encoding/binary"

	"github.com/darkroomlabs/darkroom/engine/gguf"
)

// The canvas product's codes of GGUF's K types other than Q4_K (rowCodes; Q4_K's is
// rowCodesQ4K): each 256-input block's values written as s·u + mn, u the block's own
// unsigned code widened to a byte, per sub-block of 16 inputs (Q3_K, Q2_K, Q6_K: the
// integer kernels' groups of 16, kern16, as NVFP4's blocks) or of 32 (Q5_K: its
// groups as Q4_K's). Q3_K's codes reach 7 and Q2_K's 3, which every path's sums hold
// exactly (AVX2's 16-bit words included); Q5_K's reach 31, which AVX2's words hold in
// groups of 16 (intGroup spreads its groups of 32); Q6_K's reach 63, for the wide
// paths (VNNI's 32-bit sums) only. The layouts and values are ggml's, as engine/gguf's
// decoders (dequantQ3_K …) state them.

// lanes1, lanes3 and lanes15 mask each byte of a word to its low one, two and four
// bits: the decoders below take eight inputs' codes a word at a time.
const (
	lanes1  = 0x0101010101010101
	lanes3  = 0x0303030303030303
	lanes15 = 0x0f0f0f0f0f0f0f0f
)

// rowCodesQ3K is rowCodes for GGUF Q3_K ({u8 hmask[32]; u8 qs[64]; u8 scales[12];
// fp16 d}): sixteen groups of 16, group g's value d·(sc_g − 32)·(q − 4) with the
// 3-bit code q = two bits of qs (bits 2j of byte l for input 32j + l of each half
// block of 128) and bit 4n + j of hmask[l] above them — scale d·(sc_g − 32), minimum
// −4 times it.
func (w *Matrix) rowCodesQ3K(dst []byte, s, mn []float32, r int) {
	const bb = 110
	nb := w.Cols / gguf.QK_K
	row := w.Data[r*nb*bb : (r+1)*nb*bb]
	s, mn = s[:16*nb], mn[:16*nb]
	unpackQ3K(dst, row, nb)
	for b := range nb {
		blk := (*[bb]byte)(row[bb*b:])
		d := gguf.HalfToFloat32(binary.LittleEndian.Uint16(blk[108:]))
		sc := gguf.Q3KScales(blk[96:108])
		bs, bm := (*[16]float32)(s[16*b:]), (*[16]float32)(mn[16*b:])
		for g := range bs {
			v := d * float32(sc[g])
			bs[g], bm[g] = v, -4*v
		}
	}
}

// unpackQ3KGo writes the codes (0…7) of the nb Q3_K blocks in src into dst, 256 a
// block in input order: input 128n + 32j + l is qs[32n + l]'s bits 2j and 2j + 1
// with hmask[l]'s bit 4n + j above them, eight inputs a word.
func unpackQ3KGo(dst, src []byte, nb int) {
	const bb = 110
	for b := range nb {
		blk, out := (*[bb]byte)(src[bb*b:]), (*[gguf.QK_K]byte)(dst[gguf.QK_K*b:])
		var h [4]uint64 // hmask
		for i := range h {
			h[i] = binary.LittleEndian.Uint64(blk[8*i:])
		}
		for n := range 2 {
			var q [4]uint64
			for i := range q {
				q[i] = binary.LittleEndian.Uint64(blk[32+32*n+8*i:])
			}
			for j := range 4 {
				shift, bit := uint(2*j), uint(4*n+j)
				o := (*[32]byte)(out[128*n+32*j:])
				binary.LittleEndian.PutUint64(o[0:], q[0]>>shift&lanes3|(h[0]>>bit&lanes1)<<2)
				binary.LittleEndian.PutUint64(o[8:], q[1]>>shift&lanes3|(h[1]>>bit&lanes1)<<2)
				binary.LittleEndian.PutUint64(o[16:], q[2]>>shift&lanes3|(h[2]>>bit&lanes1)<<2)
				binary.LittleEndian.PutUint64(o[24:], q[3]>>shift&lanes3|(h[3]>>bit&lanes1)<<2)
			}
		}
	}
}

// rowCodesQ2K is rowCodes for GGUF Q2_K ({u8 scales[16]; u8 qs[64]; fp16 d; fp16
// dmin}): sixteen groups of 16, group g's value d·(sc_g & 15)·q − dmin·(sc_g >> 4)
// for the 2-bit code q (bits 2j of byte l for input 32j + l of each half block) —
// scale d·(sc_g & 15), minimum −(dmin·(sc_g >> 4)).
func (w *Matrix) rowCodesQ2K(dst []byte, s, mn []float32, r int) {
	const bb = 84
	nb := w.Cols / gguf.QK_K
	row := w.Data[r*nb*bb : (r+1)*nb*bb]
	s, mn = s[:16*nb], mn[:16*nb]
	unpackQ2K(dst, row, nb)
	for b := range nb {
		blk := (*[bb]byte)(row[bb*b:])
		d := gguf.HalfToFloat32(binary.LittleEndian.Uint16(blk[80:]))
		dmin := gguf.HalfToFloat32(binary.LittleEndian.Uint16(blk[82:]))
		bs, bm := (*[16]float32)(s[16*b:]), (*[16]float32)(mn[16*b:])
		for g, sc := range blk[:16] {
			bs[g], bm[g] = d*float32(sc&15), -(dmin * float32(sc>>4))
		}
	}
}

// unpackQ2KGo writes the codes (0…3) of the nb Q2_K blocks in src into dst, 256 a
// block in input order: input 128n + 32j + l is qs[32n + l]'s bits 2j and 2j + 1,
// eight inputs a word.
func unpackQ2KGo(dst, src []byte, nb int) {
	const bb = 84
	for b := range nb {
		blk, out := (*[bb]byte)(src[bb*b:]), (*[gguf.QK_K]byte)(dst[gguf.QK_K*b:])
		for n := range 2 {
			var q [4]uint64
			for i := range q {
				q[i] = binary.LittleEndian.Uint64(blk[16+32*n+8*i:])
			}
			for j := range 4 {
				shift := uint(2 * j)
				o := (*[32]byte)(out[128*n+32*j:])
				binary.LittleEndian.PutUint64(o[0:], q[0]>>shift&lanes3)
				binary.LittleEndian.PutUint64(o[8:], q[1]>>shift&lanes3)
				binary.LittleEndian.PutUint64(o[16:], q[2]>>shift&lanes3)
				binary.LittleEndian.PutUint64(o[24:], q[3]>>shift&lanes3)
			}
		}
	}
}

// rowCodesQ6K is rowCodes for GGUF Q6_K ({u8 ql[128]; u8 qh[64]; i8 scales[16]; fp16
// d}): sixteen groups of 16, group g's value d·sc_g·(q − 32) for the 6-bit code q,
// its low four bits a nibble of ql and its high two bits two of qh — scale d·sc_g,
// minimum −32 times it.
func (w *Matrix) rowCodesQ6K(dst []byte, s, mn []float32, r int) {
	const bb = 210
	nb := w.Cols / gguf.QK_K
	row := w.Data[r*nb*bb : (r+1)*nb*bb]
	for b := range nb {
		blk, out := row[bb*b:bb*(b+1)], dst[gguf.QK_K*b:gguf.QK_K*(b+1)]
		for n := range 2 {
			o := out[128*n : 128*n+128]
			for l := 0; l < 32; l += 8 {
				lo := binary.LittleEndian.Uint64(blk[64*n+l:])
				hi := binary.LittleEndian.Uint64(blk[64*n+32+l:])
				h := binary.LittleEndian.Uint64(blk[128+32*n+l:])
				binary.LittleEndian.PutUint64(o[l:], lo&lanes15|(h&lanes3)<<4)
				binary.LittleEndian.PutUint64(o[l+32:], hi&lanes15|(h>>2&lanes3)<<4)
				binary.LittleEndian.PutUint64(o[l+64:], lo>>4&lanes15|(h>>4&lanes3)<<4)
				binary.LittleEndian.PutUint64(o[l+96:], hi>>4&lanes15|(h>>6&lanes3)<<4)
			}
		}
		d := gguf.HalfToFloat32(binary.LittleEndian.Uint16(blk[208:]))
		for g, sc := range blk[192:208] {
			v := d * float32(int8(sc))
			s[16*b+g], mn[16*b+g] = v, -32*v
		}
	}
}

// rowCodesQ5K is rowCodes for GGUF Q5_K ({fp16 d; fp16 dmin; u8 scales[12]; u8
// qh[32]; u8 qs[128]}): Q4_K's groups of 32 and their scales and minimums
// (scalesMinsK4), each code's fifth bit from qh — bit 2k of qh[l] for input l of the
// low-nibble group of pair k, bit 2k + 1 for the high one's.
func (w *Matrix) rowCodesQ5K(dst []byte, s, mn []float32, r int) {
	const bb = 176
	nb := w.Cols / gguf.QK_K
	row := w.Data[r*nb*bb : (r+1)*nb*bb]
	dst, s, mn = dst[:gguf.QK_K*nb], s[:8*nb], mn[:8*nb]
	for b := range nb {
		blk, out := (*[bb]byte)(row[bb*b:]), (*[gguf.QK_K]byte)(dst[gguf.QK_K*b:])
		var h [4]uint64 // qh
		for i := range h {
			h[i] = binary.LittleEndian.Uint64(blk[16+8*i:])
		}
		for k := range 4 {
			lo, hi := (*[32]byte)(out[64*k:]), (*[32]byte)(out[64*k+32:])
			for i := range 4 {
				q := binary.LittleEndian.Uint64(blk[48+32*k+8*i:])
				binary.LittleEndian.PutUint64(lo[8*i:], q&lanes15|(h[i]>>(2*k)&lanes1)<<4)
				binary.LittleEndian.PutUint64(hi[8*i:], q>>4&lanes15|(h[i]>>(2*k+1)&lanes1)<<4)
			}
		}
		d := gguf.HalfToFloat32(binary.LittleEndian.Uint16(blk[0:]))
		dmin := gguf.HalfToFloat32(binary.LittleEndian.Uint16(blk[2:]))
		sb, mb := (*[8]float32)(s[8*b:]), (*[8]float32)(mn[8*b:])
		scalesMinsK4(sb, mb, (*[12]byte)(blk[4:16]), d, dmin)
		for j := range mb {
			mb[j] = -mb[j]
		}
	}
}
