//go:build !amd64 || noasm

package kernels

func dotInt4Perm(xp []float32, codes []byte, scales, mins []float32, off int32, affine bool) (float32, bool) {
	return 0, false
}
