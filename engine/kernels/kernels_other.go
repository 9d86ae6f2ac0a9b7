//go:build !amd64 || noasm

package kernels

import "github.com/darkroomlabs/darkroom/engine/gguf"

const useAVX2 = false

// useAVX512 is a variable, as on amd64, so tests can turn it off.
var useAVX512 = false

func expShiftAVX2(dst, src *float32, n int, shift, scale float32) float32 {
	panic("kernels: no vector exp on this platform")
}

var gemmKernel = goKernel

func gemmKernels() []*microKernel { return []*microKernel{goKernel} }

func packPanelVector(panel, src []float32, k, base, p0, kc, w int) bool { return false }

func dot(x, y []float32) float32                        { return dotGo(x, y) }
func decodeBF16(dst []float32, src []byte)              { decodeBF16Go(dst, src) }
func decodeInt8(dst []float32, codes []byte, s float32) { decodeInt8Go(dst, codes, s) }
func decodeInt4(dst []float32, codes []byte, s float32) { decodeInt4Go(dst, codes, s) }

func decodeInt4Runs(dst []float32, codes []byte, scales, mins []float32, off int32) {
	decodeInt4RunsGo(dst, codes, scales, mins, off)
}

func decodeNibbleRuns(dst []float32, src []byte, runBytes, stride int, sm []float32, off int32) {
	decodeNibbleRunsGo(dst, src, runBytes, stride, sm, off)
}

func decodeQ8Blocks(dst []float32, src []byte, scales []float32) { decodeQ8BlocksGo(dst, src, scales) }

func decodeE2M1Runs(dst []float32, codes []byte, scales []float32) {
	decodeE2M1RunsGo(dst, codes, scales)
}

func decodeQ6K(dst []float32, blk []byte, ds *[16]float32) { decodeQ6KGo(dst, blk, ds) }

func softCapAVX2(row *float32, n int, c, scale float32) {
	panic("kernels: no vector soft-cap on this platform")
}

func maxAVX2(x *float32, n int, m float32) float32 { panic("kernels: no vector max on this platform") }
func scaleAVX2(x *float32, n int, r float32)       { panic("kernels: no vector scale on this platform") }
func addAVX2(dst, x *float32, n int)               { panic("kernels: no vector add on this platform") }

func dotQ4K(x []float32, src []byte, nb int, scales []float32) float32 {
	return dotQ4KGo(x, src, nb, scales)
}

func q4kTabled() bool { return false }

func blocks32Direct(t gguf.Type) bool { return false }

func dotBlocks32(x []float32, src []byte, t gguf.Type, nb int) float32 {
	panic("dotBlocks32 without blocks32Direct") // unreachable: mulRows asks blocks32Direct first
}

func dotQ4KTable(x []float32, src []byte, nb int) float32 {
	panic("dotQ4KTable without q4kTabled") // unreachable: dotNibbles asks q4kTabled first
}

func dotNibbleRuns(x []float32, src []byte, runBytes, stride int, scales []float32) float32 {
	return dotNibbleRunsGo(x, src, runBytes, stride, scales)
}

func decodeF16(dst []float32, src []byte) { decodeF16Go(dst, src) }

func dotBF16(x []float32, src []byte, tail []float32) float32 {
	t := tail[:len(x)]
	decodeBF16Go(t, src)
	return dotGo(t, x)
}

// No integer products off amd64 (qgemm.go): the tests run their driver with qGo.
var qBest *qPath

func qPaths() []*qPath { return nil }

func quantizeRow(q []int8, pairs, a, scale []float32, gs int) { quantizeRowGo(q, pairs, a, scale, gs) }
func interleave4(dst []byte, panelStride int, rows *[4][]byte, cols int) {
	interleave4Go(dst, panelStride, rows, cols)
}
func unpackNibbles(dst, src []byte, lut *[16]byte) { unpackNibblesGo(dst, src, lut) }
func xor80(dst, src []byte)                        { xor80Go(dst, src) }
func unpackQ4K(dst, src []byte, nb int)            { unpackQ4KGo(dst, src, nb) }
func unpackQ3K(dst, src []byte, nb int)            { unpackQ3KGo(dst, src, nb) }
func unpackQ2K(dst, src []byte, nb int)            { unpackQ2KGo(dst, src, nb) }

func transposeScalesVector(dst, src []float32, groups int) int { return 0 }
func transposeWords(dst, src []byte, kc int)                   { transposeWordsGo(dst, src, kc) }

// qHelpers2: the integer products' helpers take their Go forms here (the tests set it
// as on amd64).
var qHelpers2 = true

func q4kIntRuns() bool { return false }

func intRowsZMM() bool { return false }

func intRowsKernels() []bool { return nil }

func dotQ4KInt(xq []int8, xs []float32, src []byte, nb int, zmm bool) float32 {
	panic("dotQ4KInt without q4kIntRuns") // unreachable: mulRows asks intRows first
}

func ymmIntRuns() bool { return false }

func dotQ5KInt(xq []int8, xs []float32, src []byte, nb int) float32 {
	panic("dotQ5KInt without ymmIntRuns") // unreachable: mulRows asks intRows first
}

func dotIQ4Int(xq []int8, pairs []float32, src []byte, nb int, t gguf.Type) float32 {
	panic("dotIQ4Int without ymmIntRuns") // unreachable: mulRows asks intRows first
}

func dotK16Int(xq []int8, xs []float32, src []byte, nb int, t gguf.Type) float32 {
	panic("dotK16Int without ymmIntRuns") // unreachable: mulRows asks intRows first
}

func dotQ1Int(xq []int8, pairs []float32, src []byte, nb int, t gguf.Type) float32 {
	panic("dotQ1Int without ymmIntRuns") // unreachable: mulRows asks intRows first
}

func q50IntRuns() bool { return false }

func q40IntRuns() bool { return false }

func dotQ4_0Int(xq []int8, pairs []float32, src []byte, nb int) float32 {
	panic("dotQ4_0Int without q40IntRuns") // unreachable: mulRows asks intRows first
}

func nvfp4IntRuns() bool { return false }

func int4IntRuns() bool { return false }

func dotInt4Int(xq []int8, xsl, xsum []float32, codes []byte, scales, mins []float32) float32 {
	panic("dotInt4Int without int4IntRuns") // unreachable: mulRows asks intRows first
}

func dotNVFP4Int(xq []int8, pairs, xsum []float32, codes, srow []byte, zmm bool) float32 {
	panic("dotNVFP4Int without nvfp4IntRuns") // unreachable: mulRows asks intRows first
}

func dotQ5_0Int(xq []int8, pairs []float32, src []byte, nb int, zmm bool) float32 {
	panic("dotQ5_0Int without q50IntRuns") // unreachable: mulRows asks intRows first
}

func q4kHeaders(s, mn []float32, src []byte) { q4kHeadersGo(s, mn, src) }

func codes32Vector(dst []byte, s, mn []float32, row []byte, t gguf.Type, nb int) bool { return false }

func nvfp4ScalesVector(dst []float32, fp8 []byte, stride int, h *[16]float32, groups int) int {
	return 0
}
