package kernels

// geluK2 is −2·√(2/π), rounded to float32 as the scalar formula's constant product.
const geluK2 = -2 * 0.7978845608028654

// GeluMul writes dst[j] = gelu_tanh(gate[j])·up[j], the GeGLU product, using
// 0.5·x·(1 + tanh(u)) = x / (1 + e^(−2u)), u = √(2/π)·(x + 0.044715·x³), with ExpShift's
// exponential (clamped, so a very negative u gives x/(1+1.6e38) ≈ 0, never NaN). dst
// may be gate or up; tmp is scratch at least as long as gate. The vector passes round
// as the scalar formula (geluMulGo) does, value for value.
func GeluMul(dst, gate, up, tmp []float32) {
	n := len(gate)
	dst, up, tmp = dst[:n], up[:n], tmp[:n]
	v := geluPre(tmp, gate)
	for j := v; j < n; j++ {
		x := gate[j]
		tmp[j] = geluK2 * (x + 0.044715*x*x*x)
	}
	ExpShift(tmp, tmp, 0, 1)
	v = geluPost(dst, gate, up, tmp)
	for j := v; j < n; j++ {
		dst[j] = gate[j] / (1 + tmp[j]) * up[j]
	}
}

// geluMulGo is GeluMul with its first and last passes in scalar Go (the tests'
// reference for the vector passes).
func geluMulGo(dst, gate, up, tmp []float32) {
	n := len(gate)
	dst, up, tmp = dst[:n], up[:n], tmp[:n]
	for j, x := range gate {
		tmp[j] = geluK2 * (x + 0.044715*x*x*x)
	}
	ExpShift(tmp, tmp, 0, 1)
	for j, x := range gate {
		dst[j] = x / (1 + tmp[j]) * up[j]
	}
}
