package train

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Series is one curve of a loss plot.
type Series struct {
	Name  string
	Color color.RGBA
	X, Y  []float64
}

// LossCurvesPNG draws the training curves of metrics (total loss smoothed, the
// diffusion and AR parts, and the held-out loss) as a PNG: x = step, y = loss in
// nats/token.
func LossCurvesPNG(ms []Metric, title string) ([]byte, error) {
	var total, diff, ar, eval Series
	total = Series{Name: "train total (smoothed)", Color: color.RGBA{20, 20, 20, 255}}
	diff = Series{Name: "train diffusion", Color: color.RGBA{40, 110, 220, 255}}
	ar = Series{Name: "train AR", Color: color.RGBA{230, 120, 20, 255}}
	eval = Series{Name: "held-out total", Color: color.RGBA{200, 30, 60, 255}}
	var ema, emaD, emaA float64
	n := 0
	for _, m := range ms {
		if m.EvalLoss > 0 {
			eval.X = append(eval.X, float64(m.Step))
			eval.Y = append(eval.Y, m.EvalLoss)
			continue
		}
		if m.Loss == 0 {
			continue
		}
		a := 0.1
		if n == 0 {
			ema, emaD, emaA = m.Loss, m.Diffusion, m.AR
		} else {
			ema, emaD, emaA = ema+a*(m.Loss-ema), emaD+a*(m.Diffusion-emaD), emaA+a*(m.AR-emaA)
		}
		n++
		x := float64(m.Step)
		total.X, total.Y = append(total.X, x), append(total.Y, ema)
		diff.X, diff.Y = append(diff.X, x), append(diff.Y, emaD)
		ar.X, ar.Y = append(ar.X, x), append(ar.Y, emaA)
	}
	if n == 0 {
		return nil, fmt.Errorf("plot: no training metrics")
	}
	return PlotPNG(title, "step", "loss (nats/token)", []Series{total, diff, ar, eval}, 900, 560)
}

// PlotPNG draws line series on axes with ticks and a legend.
func PlotPNG(title, xlabel, ylabel string, series []Series, w, h int) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	left, right, top, bottom := 70, w-20, 40, h-50
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for i := range s.X {
			xmin, xmax = math.Min(xmin, s.X[i]), math.Max(xmax, s.X[i])
			ymin, ymax = math.Min(ymin, s.Y[i]), math.Max(ymax, s.Y[i])
		}
	}
	if math.IsInf(xmin, 0) {
		return nil, fmt.Errorf("plot: no points")
	}
	if xmax == xmin {
		xmax = xmin + 1
	}
	ymin = math.Max(0, math.Floor(ymin))
	ymax = math.Ceil(ymax)
	if ymax == ymin {
		ymax = ymin + 1
	}
	px := func(x float64) int { return left + int(float64(right-left)*(x-xmin)/(xmax-xmin)) }
	py := func(y float64) int { return bottom - int(float64(bottom-top)*(y-ymin)/(ymax-ymin)) }
	grey := color.RGBA{225, 225, 225, 255}
	black := color.RGBA{0, 0, 0, 255}
	// Grid and ticks.
	for i := 0; i <= 5; i++ {
		y := ymin + (ymax-ymin)*float64(i)/5
		line(img, left, py(y), right, py(y), grey)
		label(img, 5, py(y)+4, fmt.Sprintf("%6.2f", y), black)
		x := xmin + (xmax-xmin)*float64(i)/5
		line(img, px(x), top, px(x), bottom, grey)
		label(img, px(x)-15, bottom+16, fmt.Sprintf("%.0f", x), black)
	}
	line(img, left, top, left, bottom, black)
	line(img, left, bottom, right, bottom, black)
	label(img, left, 20, title, black)
	label(img, (left+right)/2-20, h-12, xlabel, black)
	label(img, 5, top-8, ylabel, black)
	for k, s := range series {
		for i := 1; i < len(s.X); i++ {
			line(img, px(s.X[i-1]), py(s.Y[i-1]), px(s.X[i]), py(s.Y[i]), s.Color)
		}
		if len(s.X) == 1 || (len(s.X) < 40 && len(s.X) > 0) {
			for i := range s.X {
				dot(img, px(s.X[i]), py(s.Y[i]), s.Color)
			}
		}
		ly := top + 16 + 16*k
		line(img, right-210, ly-4, right-190, ly-4, s.Color)
		line(img, right-210, ly-3, right-190, ly-3, s.Color)
		label(img, right-185, ly, s.Name, black)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	return buf.Bytes(), nil
}

func label(img *image.RGBA, x, y int, s string, c color.Color) {
	d := &font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func dot(img *image.RGBA, x, y int, c color.RGBA) {
	for dx := -2; dx <= 2; dx++ {
		for dy := -2; dy <= 2; dy++ {
			img.SetRGBA(x+dx, y+dy, c)
		}
	}
}

// line draws a 1-pixel line (Bresenham).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := 1, 1
	if x0 > x1 {
		sx = -1
	}
	if y0 > y1 {
		sy = -1
	}
	err := dx + dy
	for {
		img.SetRGBA(x0, y0, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * err
		if e2 >= dy {
			err += dy
			x0 += sx
		}
		if e2 <= dx {
			err += dx
			y0 += sy
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
