//go:build !noasm

package kernels

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// tile2x4AVX2 is tile2x4Go in AVX2+FMA assembly (tile_amd64.s).
//
//go:noescape
func tile2x4AVX2(a0, a1, b0, b1, b2, b3 *float32, kv int, sums *[8]float32)

func tile2x4(a0, a1, b0, b1, b2, b3 *float32, kv int, sums *[8]float32) {
	if useAVX2 {
		tile2x4AVX2(a0, a1, b0, b1, b2, b3, kv, sums)
		return
	}
	tile2x4Go(unsafe.Slice(a0, kv), unsafe.Slice(a1, kv), unsafe.Slice(b0, kv), unsafe.Slice(b1, kv),
		unsafe.Slice(b2, kv), unsafe.Slice(b3, kv), kv, sums)
}

// expShiftAVX2 is ExpShift's vector part (tile_amd64.s); n is a positive multiple of 8.
//
//go:noescape
func expShiftAVX2(dst, src *float32, n int, shift, scale float32) float32
