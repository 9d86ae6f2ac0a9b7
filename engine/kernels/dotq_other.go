//go:build !amd64 || noasm

package kernels

func dotInt4Rows(out []float32, n int, xp []float32, m int, codes []byte, scales, mins []float32, affine bool) bool {
	return false
}

func dotInt8Rows(out, x []float32, codes []byte, scales []float32, tail []float32) {
	k := len(x)
	t := tail[:k]
	for j := range out {
		decodeInt8Go(t, codes[k*j:k*(j+1)], scales[j])
		out[j] = dotGo(t, x)
	}
}

func dotInt8Groups(out, x []float32, codes []byte, scales []float32) bool { return false }
