package spec

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/weights"
)

// The core proof: speculative sampling draws the generated text from the target's
// distribution. A tiny model with a 12-token vocabulary, whose first three generated tokens
// have 12^3 possible values, is sampled N times with different seeds; the joint frequencies
// are compared with the exact distribution (enumerated with the reference model) and with
// plain sampling's. Deliberately broken samplers must fail the same checks.
var distCfg = weights.Config{Arch: "llama", Dim: 16, HiddenDim: 32, NLayers: 1, NHeads: 2, NKVHeads: 2, HeadDim: 8,
	Vocab: 12, MaxSeq: 32, RopeTheta: 10000, RMSEps: 1e-5}

var distPrompt = []int{3, 1, 4, 1, 5}

const (
	distTokens = 3    // the joint of the first 3 generated tokens
	distAlpha  = 1e-4 // false-failure probability of each check
)

var distSettings = []model.Sampling{{Temperature: 1}, {Temperature: 1, TopP: 0.9}}

func distWeights() *weights.LlamaWeights { return ref.RandomLlama(distCfg, 4) }

// exactJoint is the probability of each continuation t1 t2 t3 (index t1 V^2 + t2 V + t3) under
// plain sampling with p: the product of ProcessedProbs of the reference logits.
func exactJoint(w *weights.LlamaWeights, p ref.SamplingParams) []float64 {
	V := w.Cfg.Vocab
	joint := []float64{1}
	prefixes := [][]int{nil}
	for range distTokens {
		var nj []float64
		var np [][]int
		for i, pre := range prefixes {
			st := ref.NewLlamaState(w)
			logits, _ := st.Forward(append(append([]int(nil), distPrompt...), pre...))
			probs := ref.ProcessedProbs(logits[len(logits)-V:], p)
			for tok, pr := range probs {
				nj = append(nj, joint[i]*pr)
				np = append(np, append(append([]int(nil), pre...), tok))
			}
		}
		joint, prefixes = nj, np
	}
	return joint
}

// sampleJoint counts the first distTokens tokens of n decodes with seeds seed0, seed0+1, ...
// newTarget makes a fresh target, newDrafter the drafter for a seed (nil: plain sampling).
func sampleJoint(t *testing.T, n int, seed0 uint64, s model.Sampling, k int, newTarget func() (Target, func()),
	newDrafter func(seed uint64) Drafter) []float64 {
	V := distCfg.Vocab
	counts := make([]float64, int(math.Pow(float64(V), distTokens)))
	for i := range n {
		s.Seed = seed0 + uint64(i)
		tg, release := newTarget()
		var d Drafter
		if newDrafter != nil {
			d = newDrafter(s.Seed)
		}
		idx, got := 0, 0
		_, err := Decode(context.Background(), tg, d, distPrompt, k, 2*distTokens+k, s, nil, func(tok int) bool {
			idx, got = idx*V+tok, got+1
			return got < distTokens
		})
		release()
		if err != nil || got != distTokens {
			t.Fatalf("seed %d: %d tokens, %v", s.Seed, got, err)
		}
		counts[idx]++
	}
	return counts
}

// The checks. With N samples of a distribution p over m outcomes, E|count_i/N - p_i| <=
// sqrt(p_i (1-p_i) / N) (Jensen), so E TV(p^, p) <= B = 1/2 sum_i sqrt(p_i (1-p_i) / N); TV moves
// by at most 1/N per sample, so by McDiarmid P(TV > B + t) <= exp(-2 N t^2): the threshold
// B + sqrt(ln(1/alpha) / (2N)) fails a correct sampler with probability <= alpha. The
// chi-square statistic over the cells with N p_i >= 5 (the others pooled into one) is compared
// with its 1-alpha quantile; any sample of a p_i = 0 outcome fails outright.

type distReport struct {
	chi2, chi2Max  float64 // the joint's chi-square and its threshold
	df, impossible int
	tv, tvMax      [distTokens + 1]float64 // marginals of t1, t2, t3, then the joint of (t1, t2)
}

func (r distReport) ok() bool {
	pass := r.impossible == 0 && r.chi2 <= r.chi2Max
	for i := range r.tv {
		pass = pass && r.tv[i] <= r.tvMax[i]
	}
	return pass
}

func (r distReport) String() string {
	s := fmt.Sprintf("chi2 %.1f (max %.1f, df %d), impossible %d, TV", r.chi2, r.chi2Max, r.df, r.impossible)
	for i, name := range []string{"t1", "t2", "t3", "t1t2"} {
		s += fmt.Sprintf(" %s %.4f (max %.4f)", name, r.tv[i], r.tvMax[i])
	}
	return s
}

// project sums a joint [V^3] over the tokens not in keep (positions 0..2).
func project(joint []float64, keep ...int) []float64 {
	V := distCfg.Vocab
	out := make([]float64, int(math.Pow(float64(V), float64(len(keep)))))
	for idx, v := range joint {
		toks := []int{idx / (V * V), idx / V % V, idx % V}
		j := 0
		for _, k := range keep {
			j = j*V + toks[k]
		}
		out[j] += v
	}
	return out
}

// compare checks counts (N samples) against the exact joint.
func compare(counts, exact []float64) distReport {
	var N float64
	for _, c := range counts {
		N += c
	}
	var r distReport
	var restO, restE float64
	cells := 0
	for i, p := range exact {
		switch e := N * p; {
		case p == 0:
			r.impossible += int(counts[i])
		case e >= 5:
			r.chi2 += (counts[i] - e) * (counts[i] - e) / e
			cells++
		default:
			restO, restE = restO+counts[i], restE+e
		}
	}
	if restE > 0 {
		r.chi2 += (restO - restE) * (restO - restE) / restE
		cells++
	}
	r.df = cells - 1
	r.chi2Max = chi2Quantile(r.df, distAlpha)
	for i, keep := range [][]int{{0}, {1}, {2}, {0, 1}} {
		pc, pe := project(counts, keep...), project(exact, keep...)
		bound := 0.0
		for j := range pe {
			r.tv[i] += math.Abs(pc[j]/N-pe[j]) / 2
			bound += math.Sqrt(pe[j]*(1-pe[j])/N) / 2
		}
		r.tvMax[i] = bound + math.Sqrt(math.Log(1/distAlpha)/(2*N))
	}
	return r
}

// twoSample is the chi-square homogeneity statistic of two samples of equal size over the
// cells of exact (pooled as in compare), its threshold, and their joint-(t1, t2) TV with its
// threshold: E TV(a^, b^) <= 2B and TV moves by <= 1/N per sample of 2N, so
// P(TV > 2B + t) <= exp(-N t^2).
func twoSample(a, b, exact []float64) (chi2, chi2Max, tv, tvMax float64) {
	var N float64
	for _, c := range a {
		N += c
	}
	var ra, rb float64
	cells := 0
	for i, p := range exact {
		if N*p >= 5 {
			if a[i]+b[i] > 0 {
				chi2 += (a[i] - b[i]) * (a[i] - b[i]) / (a[i] + b[i])
			}
			cells++
		} else {
			ra, rb = ra+a[i], rb+b[i]
		}
	}
	if ra+rb > 0 {
		chi2 += (ra - rb) * (ra - rb) / (ra + rb)
		cells++
	}
	pa, pb, pe := project(a, 0, 1), project(b, 0, 1), project(exact, 0, 1)
	for j := range pe {
		tv += math.Abs(pa[j]-pb[j]) / N / 2
		tvMax += math.Sqrt(pe[j] * (1 - pe[j]) / N) // 2 B
	}
	return chi2, chi2Quantile(cells-1, distAlpha), tv, tvMax + math.Sqrt(math.Log(1/distAlpha)/N)
}

// chi2Quantile is the upper alpha quantile of chi-square with df degrees of freedom
// (Wilson-Hilferty; within 1% for df >= 10 at these tails).
func chi2Quantile(df int, alpha float64) float64 {
	z := normalQuantile(1 - alpha)
	k := float64(df)
	c := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
	return k * c * c * c
}

// normalQuantile inverts the standard normal CDF by bisection.
func normalQuantile(p float64) float64 {
	lo, hi := -10.0, 10.0
	for range 100 {
		mid := (lo + hi) / 2
		if 0.5*math.Erfc(-mid/math.Sqrt2) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}
