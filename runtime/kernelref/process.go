package kernelref

import "math"

// Penalties are the logits processors a sequence applies before sampling, as vLLM does: the
// bias first, then the penalties. Presence and frequency penalties count the tokens generated
// so far; the repetition penalty (Hugging Face's) applies to a token in the prompt or
// generated.
type Penalties struct {
	Presence, Frequency float32
	Repetition          float32         // 0 or 1: off
	Bias                map[int]float32 // token -> added to its logit
}

// Apply returns logits [V] processed for a sequence whose prompt holds the tokens of inPrompt
// and whose generated tokens so far (drafts being verified included) are generated.
func (p Penalties) Apply(logits []float32, inPrompt map[int]bool, generated []int) []float32 {
	out := append([]float32(nil), logits...)
	for t, b := range p.Bias {
		out[t] += b
	}
	count := map[int]int{}
	for _, t := range generated {
		count[t]++
	}
	seen := map[int]bool{}
	for t := range inPrompt {
		seen[t] = true
	}
	for t := range count {
		seen[t] = true
	}
	for t := range seen {
		out[t] = Penalize(out[t], count[t], inPrompt[t], p)
	}
	return out
}

// Penalize is one token's logit z after the penalties, for count occurrences among the
// generated tokens and inPrompt.
func Penalize(z float32, count int, inPrompt bool, p Penalties) float32 {
	if r := p.Repetition; r > 0 && r != 1 && (inPrompt || count > 0) {
		if z > 0 {
			z /= r
		} else {
			z *= r
		}
	}
	if count > 0 {
		z -= p.Frequency*float32(count) + p.Presence
	}
	return z
}

// Rank is tok's rank among logits [V]: 1 + the tokens of higher logits.
func Rank(logits []float32, tok int) int {
	r := 1
	for _, l := range logits {
		if l > logits[tok] {
			r++
		}
	}
	return r
}

// Logprobs returns the log-softmax of logits [V] at token tok and the n likeliest tokens with
// theirs, most likely first (on equal logits the lower id first).
func Logprobs(logits []float32, tok, n int) (float32, []int, []float32) {
	mx := math.Inf(-1)
	for _, l := range logits {
		mx = math.Max(mx, float64(l))
	}
	var sum float64
	for _, l := range logits {
		sum += math.Exp(float64(l) - mx)
	}
	lse := mx + math.Log(sum)
	ids := make([]int, 0, n)
	lps := make([]float32, 0, n)
	prevV, prevI := math.Inf(1), -1
	for len(ids) < n && len(ids) < len(logits) {
		bv, bi := math.Inf(-1), -1
		for i, l := range logits {
			v := float64(l)
			if (v < prevV || (v == prevV && i > prevI)) && (v > bv || bi < 0) {
				bv, bi = v, i
			}
		}
		ids, lps = append(ids, bi), append(lps, float32(bv-lse))
		prevV, prevI = bv, bi
	}
	return float32(float64(logits[tok]) - lse), ids, lps
}
