//go:build !amd64 || noasm

package kernels

func dotInt4Perm(xp []float32, codes []byte, scales, mins []float32, off int32, affine bool) (float32, bool) {
	return 0, false
}

func dotInt8(x []float32, codes []byte, s float32, tail []float32) float32 {
	t := tail[:len(x)]
	decodeInt8Go(t, codes[:len(x)], s)
	return dotGo(t, x)
}
