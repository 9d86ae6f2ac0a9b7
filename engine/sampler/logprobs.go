package sampler

import "math"

// MinLogProb is the least log probability LogProbs reports: OpenAI's value for
// a token the model cannot write.
const MinLogProb = -9999

// LogProbs returns the log probability of id under softmax(logits), the model's
// own distribution over the vocabulary (no temperature, no penalty: what the
// API's logprobs report, as vLLM's raw logprobs), and the top most likely ids
// with theirs, most likely first, ties by the lower id. The normalizer is
// accumulated in float64. A logit that is not a number counts as none. A log
// probability is at least MinLogProb, so that it is always a number JSON can
// carry (an id the sampler banished, or outside the row, is MinLogProb).
func LogProbs(logits []float32, id, top int) (logprob float32, topIDs []int, topLogprobs []float32) {
	mx := math.Inf(-1)
	for _, v := range logits {
		if float64(v) > mx {
			mx = float64(v)
		}
	}
	var sum float64
	for _, v := range logits {
		if x := float64(v) - mx; x > -745 { // exp underflows to 0 below
			sum += math.Exp(x)
		}
	}
	lse := mx + math.Log(sum)
	lp := func(v float32) float32 {
		if math.IsNaN(float64(v)) {
			return MinLogProb
		}
		return float32(max(float64(v)-lse, MinLogProb))
	}
	logprob = MinLogProb
	if id >= 0 && id < len(logits) {
		logprob = lp(logits[id])
	}
	top = min(top, len(logits))
	if top <= 0 {
		return logprob, nil, nil
	}
	// The top ids by insertion into a short sorted list: one comparison per
	// logit against the list's last once it is full.
	topIDs = make([]int, 0, top)
	for i, v := range logits {
		if math.IsNaN(float64(v)) {
			continue
		}
		n := len(topIDs)
		if n == top && v <= logits[topIDs[n-1]] {
			continue
		}
		at := n
		for at > 0 && v > logits[topIDs[at-1]] {
			at--
		}
		if n < top {
			topIDs = append(topIDs, 0)
		}
		copy(topIDs[at+1:], topIDs[at:len(topIDs)-1])
		topIDs[at] = i
	}
	topLogprobs = make([]float32, len(topIDs))
	for k, i := range topIDs {
		topLogprobs[k] = lp(logits[i])
	}
	return logprob, topIDs, topLogprobs
}
