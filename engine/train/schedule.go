package train

import "math"

// LearningRate is the schedule of the official recipes: linear warm-up from 0 to
// peak over warmup steps, then cosine decay to minLR at step total. step is
// 0-based (the step about to run); past total it stays at minLR.
func LearningRate(step, warmup, total int, peak, minLR float64) float64 {
	if warmup > 0 && step < warmup {
		return peak * float64(step+1) / float64(warmup)
	}
	if total <= warmup {
		return peak
	}
	progress := float64(step-warmup) / float64(total-warmup)
	if progress > 1 {
		progress = 1
	}
	return minLR + 0.5*(peak-minLR)*(1+math.Cos(math.Pi*progress))
}
