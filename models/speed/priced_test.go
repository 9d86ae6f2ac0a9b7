package speed

import (
	"context"
	"testing"
	"time"

	"github.com/darkroomlabs/darkroom/engine/kernels"
)

// BenchmarkPriced runs the 26B's products as the host model runs them — an AR
// token's int8 layer products and its int4 experts' job from memory, a canvas's
// int4 experts at 16 rows each and its int8 projections at 256 rows — over distinct
// matrices that outgrow the caches, and reports each one's price in the estimate
// (from a calibration taken in the same process just before) against its run:
// priced/run below 1 is a term that underprices its kernel. It is for a quiet
// machine (issue #13: the 26B's AR estimate 1.41× its run, its step 0.71×):
//
//	go test -run '^$' -bench Priced -benchtime 5x ./models/speed/
func BenchmarkPriced(b *testing.B) {
	r, err := Measure(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	span := streamSpan()
	data := streamData(streamBytes(span))
	x := fill(256 * 4096)
	out := make([]float32, 256*8192)
	// price is ws's kernel time at m rows in the estimate (inJob: an AR step's
	// experts' job; inCache false: the weights come from memory).
	price := func(ws []*kernels.Matrix, m float64, inJob bool) float64 {
		var s float64
		for _, w := range ws {
			f := formatOfMatrix(w)
			k, _ := r.kernelSeconds(work{m: m, k: w.Cols, n: w.Rows, count: 1, format: f,
				bytes: float64(len(w.Data) + len(w.Scales)), inJob: inJob}, false)
			s += k
		}
		return s
	}
	run := func(name string, ws []*kernels.Matrix, m int, job bool) {
		b.Run(name, func(b *testing.B) {
			var sec float64
			for b.Loop() {
				t0 := time.Now()
				switch {
				case job:
					sweep(ws, true, x, out)
				case m == 1:
					sweep(ws, false, x, out)
				default:
					for _, w := range ws {
						_ = w.MulNT(out, x, m)
					}
				}
				sec += time.Since(t0).Seconds()
			}
			b.ReportMetric(price(ws, float64(m), job)/(sec/float64(b.N)), "priced/run")
		})
	}
	// The int4 profile's formats: attention, dense MLP and head int8, experts int4.
	int8s, err := newStreamSet("int8", span, data)
	if err != nil {
		b.Fatal(err)
	}
	int4s, err := newStreamSet("int4", span, data)
	if err != nil {
		b.Fatal(err)
	}
	run("AR/int8-layer", int8s.layer, 1, false)
	run("AR/int4-experts-job", int4s.experts, 1, true)
	run("step/int4-experts-16-rows", int4s.experts, 16, false)
	run("step/int8-layer-256-rows", int8s.layer[:len(layerShapes)], 256, false)
}

// formatOfMatrix names w's format as the rates do (matrixOf's formats).
func formatOfMatrix(w *kernels.Matrix) string {
	for _, f := range formats {
		m, err := matrixOf(f, 64, 64)
		if err == nil && m.Spec == w.Spec && m.GGUF == w.GGUF {
			return f
		}
	}
	return ""
}
