//go:build !noasm

package kernels

// geluPreAVX2 writes tmp[i] = −2√(2/π)·(x + 0.044715·x·x·x), x = gate[i], for n (a
// positive multiple of 8) values (gelu_amd64.s).
//
//go:noescape
func geluPreAVX2(tmp, gate *float32, n int)

// geluPostAVX2 writes dst[i] = gate[i] / (1 + tmp[i]) · up[i] for n (a positive multiple
// of 8) values (gelu_amd64.s).
//
//go:noescape
func geluPostAVX2(dst, gate, up, tmp *float32, n int)

// geluPre is GeluMul's first pass over the vector part; it returns the values done.
func geluPre(tmp, gate []float32) int {
	if !useAVX2 || len(gate) < 8 {
		return 0
	}
	n := len(gate) &^ 7
	_ = tmp[n-1]
	geluPreAVX2(&tmp[0], &gate[0], n)
	return n
}

// geluPost is GeluMul's last pass over the vector part; it returns the values done.
func geluPost(dst, gate, up, tmp []float32) int {
	if !useAVX2 || len(gate) < 8 {
		return 0
	}
	n := len(gate) &^ 7
	_, _, _ = dst[n-1], up[n-1], tmp[n-1]
	geluPostAVX2(&dst[0], &gate[0], &up[0], &tmp[0], n)
	return n
}
