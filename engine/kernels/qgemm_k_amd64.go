//go:build !noasm

package kernels

// unpackQ3KAVX2 and unpackQ2KAVX2 are unpackQ3KGo and unpackQ2KGo over blocks ≥ 1
// blocks (qgemm_k_amd64.s).
//
//go:noescape
func unpackQ3KAVX2(dst, src *byte, blocks int)

//go:noescape
func unpackQ2KAVX2(dst, src *byte, blocks int)

// unpackQ3K writes the codes of the nb Q3_K blocks in src into dst (unpackQ3KGo).
func unpackQ3K(dst, src []byte, nb int) { unpackBlocks(dst, src, nb, 110, unpackQ3KAVX2, unpackQ3KGo) }

// unpackQ2K writes the codes of the nb Q2_K blocks in src into dst (unpackQ2KGo).
func unpackQ2K(dst, src []byte, nb int) { unpackBlocks(dst, src, nb, 84, unpackQ2KAVX2, unpackQ2KGo) }

// unpackBlocks writes the codes of the nb blocks of bb bytes in src into dst, 256 a
// block, with vec (AVX2) where the CPU has it, else with plain.
func unpackBlocks(dst, src []byte, nb, bb int, vec func(dst, src *byte, blocks int), plain func(dst, src []byte, nb int)) {
	if nb == 0 {
		return
	}
	if !useAVX2 {
		plain(dst, src, nb)
		return
	}
	_, _ = dst[256*nb-1], src[bb*nb-1]
	vec(&dst[0], &src[0], nb)
}
