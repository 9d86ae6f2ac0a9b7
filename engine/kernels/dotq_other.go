//go:build !amd64 || noasm

package kernels

func dotInt4Rows(out []float32, n int, xp []float32, m int, codes []byte, scales, mins []float32, affine bool) bool {
	return false
}

func dotInt8Rows(out []float32, n int, a []float32, m int, codes []byte, scales []float32, tail []float32) {
	if m == 0 {
		return
	}
	k := len(a) / m
	t := tail[:k]
	for j := range scales {
		decodeInt8Go(t, codes[k*j:k*(j+1)], scales[j])
		for i := range m {
			out[i*n+j] = dotGo(t, a[i*k:(i+1)*k])
		}
	}
}

func dotInt8Groups(out []float32, n int, a []float32, m int, codes []byte, scales []float32) bool {
	return false
}
