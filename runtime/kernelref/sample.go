package kernelref

import (
	"math"
	"slices"
)

// SamplingParams selects how a token is drawn from a row of logits.
type SamplingParams struct {
	Temperature float32 // <= 0: greedy (argmax)
	TopK        int     // keep the TopK largest logits (ties kept); <= 0 or >= vocab: off
	TopP        float32 // keep the smallest top set with probability >= TopP; <= 0 or >= 1: off
	MinP        float32 // keep i iff exp(z[i] - max z) >= MinP (with top-k); <= 0: off
}

// Greedy reports whether p selects the argmax rather than a random draw.
func (p SamplingParams) Greedy() bool { return p.Temperature <= 0 }

// ProcessedProbs returns the distribution [V] that Sample draws from for logits [V]
// (zero outside the kept set). In float64:
//
//  1. Greedy (Temperature <= 0): one-hot on Argmax(logits); stop.
//  2. z[i] = logits[i] / Temperature.
//  3. Top-k, when 0 < TopK < V: t = the TopK-th largest z, counting duplicates;
//     keep i iff z[i] >= t (so ties at the threshold are all kept). Min-p, when MinP > 0:
//     keep i only if z[i] - max z >= log(MinP) (its probability is at least MinP times
//     the likeliest's).
//  4. p[i] = exp(z[i] - max z) / sum over kept j of exp(z[j] - max z); 0 if not kept.
//  5. Top-p, when 0 < TopP < 1: sort the kept p descending and take the shortest prefix
//     whose cumulative sum is >= TopP; t = the last value of that prefix (if rounding
//     keeps the sum below TopP, t = the smallest kept p). Keep i iff p[i] >= t (ties
//     kept), and renormalise over the kept set.
func ProcessedProbs(logits []float32, p SamplingParams) []float64 {
	V := len(logits)
	probs := make([]float64, V) // [V]
	if p.Greedy() {
		probs[Argmax(logits)] = 1
		return probs
	}

	z := make([]float64, V) // [V]
	for i, l := range logits {
		z[i] = float64(l) / float64(p.Temperature)
	}
	keep := make([]bool, V) // [V]
	for i := range keep {
		keep[i] = true
	}
	if p.TopK > 0 && p.TopK < V {
		t := kthLargest(z, p.TopK)
		for i := range z {
			keep[i] = z[i] >= t
		}
	}
	if p.MinP > 0 {
		zmax := slices.Max(z)
		lmin := math.Log(float64(p.MinP))
		for i := range z {
			keep[i] = keep[i] && z[i]-zmax >= lmin
		}
	}

	mx := math.Inf(-1)
	for i := range z {
		if keep[i] {
			mx = math.Max(mx, z[i])
		}
	}
	var sum float64
	for i := range z {
		if keep[i] {
			probs[i] = math.Exp(z[i] - mx)
			sum += probs[i]
		}
	}
	for i := range probs {
		probs[i] /= sum
	}

	if p.TopP > 0 && p.TopP < 1 {
		t := topPThreshold(probs, float64(p.TopP))
		sum = 0
		for i := range probs {
			if probs[i] < t {
				probs[i] = 0
			}
			sum += probs[i]
		}
		for i := range probs {
			probs[i] /= sum
		}
	}
	return probs
}

// topPThreshold returns the last value of the shortest prefix of the positive probs,
// sorted descending, whose cumulative sum is >= topP (the smallest positive value if
// rounding keeps the total below topP).
//
// Sorting the whole vocabulary for every token is slow, so it sorts only candidates
// >= g: if those already sum to topP the prefix lies among them (it starts with the
// largest values). g starts at 1/V, which the top of a peaked distribution clears, and
// falls until the candidates suffice or are every positive value.
func topPThreshold(probs []float64, topP float64) float64 {
	positive := 0
	for _, v := range probs {
		if v > 0 {
			positive++
		}
	}
	for g := 1 / float64(len(probs)); ; g /= 16 {
		var cand []float64
		var sum float64
		for _, v := range probs {
			if v > 0 && v >= g {
				cand = append(cand, v)
				sum += v
			}
		}
		if sum < topP && len(cand) < positive {
			continue
		}
		slices.Sort(cand) // ascending: walk it from the largest down
		var cum float64
		for j := len(cand) - 1; j >= 0; j-- {
			cum += cand[j]
			if cum >= topP {
				return cand[j]
			}
		}
		return cand[0]
	}
}

// kthLargest returns the k-th largest value of x (k from 1), counting duplicates.
func kthLargest(x []float64, k int) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s[len(s)-k]
}

// Sample draws a token from logits [V] under p with the counter-based generator, keyed
// by (seed, seq, pos) where pos is the position of the token being produced:
//
//   - greedy (Temperature <= 0): Argmax(logits);
//   - otherwise, with probs = ProcessedProbs(logits, p), the Gumbel-max trick:
//     token = argmax over i with probs[i] > 0 of log(probs[i]) + Gumbel(seed, seq, pos, uint32(i)),
//     the lowest index on ties. This is an exact draw from probs.
func Sample(logits []float32, p SamplingParams, seed uint64, seq, pos uint32) int {
	if p.Greedy() {
		return Argmax(logits)
	}
	return GumbelMax(ProcessedProbs(logits, p), seed, seq, pos)
}

// GumbelMax returns argmax over i with w[i] > 0 of log(w[i]) + Gumbel(seed, seq, pos,
// uint32(i)), the lowest index on ties: a draw from w / sum(w) (w need not be
// normalised). It returns -1 when no weight is positive.
func GumbelMax(w []float64, seed uint64, seq, pos uint32) int {
	best, bestV := -1, math.Inf(-1)
	for i, wi := range w {
		if !(wi > 0) {
			continue
		}
		v := math.Log(wi) + float64(Gumbel(seed, seq, pos, uint32(i)))
		if best < 0 || v > bestV {
			best, bestV = i, v
		}
	}
	return best
}
