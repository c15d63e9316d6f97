package schedtest

import (
	"context"
	"fmt"
	"math"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/grammar"
	"github.com/wspec/wspec/spec/sched"
	"github.com/wspec/wspec/weights"
)

// The core proof: speculative sampling draws the generated text from the target's
// distribution. A tiny model with a 12-token vocabulary, whose first three generated tokens
// have 12^3 possible values, is sampled N times with different seeds; the joint frequencies
// are compared with the exact distribution (enumerated with the reference model) and with
// plain sampling's. Deliberately broken samplers must fail the same checks.

// DistConfig is the tiny model; DistPrompt its prompt.
var DistConfig = weights.Config{Arch: "llama", Dim: 16, HiddenDim: 32, NLayers: 1, NHeads: 2, NKVHeads: 2, HeadDim: 8,
	Vocab: 12, MaxSeq: 32, RopeTheta: 10000, RMSEps: 1e-5}

var DistPrompt = []int{3, 1, 4, 1, 5}

const (
	DistTokens = 3    // the joint of the first 3 generated tokens
	DistAlpha  = 1e-4 // false-failure probability of each check
)

// DistSettings are the samplings checked.
var DistSettings = []batch.Sampling{{Temperature: 1}, {Temperature: 1, TopP: 0.9}}

// DistWeights are the tiny model's weights.
func DistWeights() *weights.LlamaWeights { return ref.RandomLlama(DistConfig, 4) }

// ExactJoint is the probability of each continuation t1 t2 t3 (index t1 V^2 + t2 V + t3) under
// plain sampling with p: the product of ProcessedProbs of the reference logits.
func ExactJoint(w *weights.LlamaWeights, p kernelref.SamplingParams) []float64 {
	return ExactJointGrammar(w, p, nil)
}

// DistPieces are the tiny model's tokens as text, for grammars: the last has none (a special
// token). DistGrammar's text is pairs of a and b or c: after an even number of characters the
// tokens a, ab and ac are allowed, after an odd one b, c, ba and ca, so the mask changes from
// one position to the next as the drafts go.
var DistPieces = []string{"a", "b", "c", "ab", "ca", "bc", "cc", "x", "ac", "ba", "cb", ""}

// DistGrammar compiles the tiny model's grammar.
func DistGrammar() *grammar.Grammar {
	v := grammar.NewVocab(DistConfig.Vocab, func(id int) []byte { return []byte(DistPieces[id]) })
	g, err := grammar.Compile(grammar.Spec{Kind: grammar.Regex, Text: `(a[bc])+`}, v)
	if err != nil {
		panic(err)
	}
	return g
}

// ExactJointGrammar is ExactJoint under grammar g (nil: none): each position's logits masked
// to the tokens g allows after the prefix, then processed.
func ExactJointGrammar(w *weights.LlamaWeights, p kernelref.SamplingParams, g *grammar.Grammar) []float64 {
	V := w.Cfg.Vocab
	joint := []float64{1}
	prefixes := [][]int{nil}
	for range DistTokens {
		var nj []float64
		var np [][]int
		for i, pre := range prefixes {
			st := ref.NewLlamaState(w)
			logits, _ := st.Forward(append(append([]int(nil), DistPrompt...), pre...))
			row := append([]float32(nil), logits[len(logits)-V:]...)
			var m *grammar.Matcher
			ok := true
			if g != nil {
				m = g.NewMatcher()
				for _, t := range pre {
					ok = ok && m.Accept(t) == nil
				}
			}
			probs := make([]float64, V)
			switch {
			case g == nil:
				probs = kernelref.ProcessedProbs(row, p)
			case ok && joint[i] > 0:
				mask, _ := m.Mask()
				kernelref.ApplyMask(row, mask)
				probs = kernelref.ProcessedProbs(row, p)
			}
			for tok, pr := range probs {
				nj = append(nj, joint[i]*pr)
				np = append(np, append(append([]int(nil), pre...), tok))
			}
		}
		joint, prefixes = nj, np
	}
	return joint
}

// SampleJoint counts the first DistTokens tokens of n generations after DistPrompt with seeds
// seed0, seed0+1, ..., all submitted at once to one scheduler over target, drafting k tokens a
// step with method (nil or k 0: plain sampling).
func SampleJoint(target sched.Target, method spec.Method, n int, seed0 uint64, s batch.Sampling, k int) ([]float64, error) {
	return SampleJointGrammar(target, method, n, seed0, s, k, nil)
}

// SampleJointGrammar is SampleJoint with each generation constrained by grammar g (nil: none).
func SampleJointGrammar(target sched.Target, method spec.Method, n int, seed0 uint64, s batch.Sampling, k int, g *grammar.Grammar) ([]float64, error) {
	V := DistConfig.Vocab
	counts := make([]float64, int(math.Pow(float64(V), DistTokens)))
	sc := sched.New(target, method, sched.Options{})
	defer sc.Close()
	chans := make([]<-chan sched.Result, n)
	for i := range n {
		r := &sched.Request{Ctx: context.Background(), Prompt: DistPrompt, MaxNew: DistTokens, Sampling: s, K: k, FixedK: true}
		r.Sampling.Seed = seed0 + uint64(i)
		if g != nil {
			r.Grammar = g.NewMatcher()
		}
		chans[i] = sc.Submit(r)
	}
	go sc.Run()
	for i, c := range chans {
		res := <-c
		if res.Err != nil || len(res.Tokens) != DistTokens {
			return nil, fmt.Errorf("seed %d: %v, %v", seed0+uint64(i), res.Tokens, res.Err)
		}
		idx := 0
		for _, tok := range res.Tokens {
			idx = idx*V + tok
		}
		counts[idx]++
	}
	return counts, nil
}

// The checks. With N samples of a distribution p over m outcomes, E|count_i/N - p_i| <=
// sqrt(p_i (1-p_i) / N) (Jensen), so E TV(p^, p) <= B = 1/2 sum_i sqrt(p_i (1-p_i) / N); TV moves
// by at most 1/N per sample, so by McDiarmid P(TV > B + t) <= exp(-2 N t^2): the threshold
// B + sqrt(ln(1/alpha) / (2N)) fails a correct sampler with probability <= alpha. The
// chi-square statistic over the cells with N p_i >= 5 (the others pooled into one) is compared
// with its 1-alpha quantile; any sample of a p_i = 0 outcome fails outright.

// Report is a sample's distance from the exact joint.
type Report struct {
	Chi2, Chi2Max  float64 // the joint's chi-square and its threshold
	DF, Impossible int
	TV, TVMax      [DistTokens + 1]float64 // marginals of t1, t2, t3, then the joint of (t1, t2)
}

// OK says whether every check passed.
func (r Report) OK() bool {
	pass := r.Impossible == 0 && r.Chi2 <= r.Chi2Max
	for i := range r.TV {
		pass = pass && r.TV[i] <= r.TVMax[i]
	}
	return pass
}

func (r Report) String() string {
	s := fmt.Sprintf("chi2 %.1f (max %.1f, df %d), impossible %d, TV", r.Chi2, r.Chi2Max, r.DF, r.Impossible)
	for i, name := range []string{"t1", "t2", "t3", "t1t2"} {
		s += fmt.Sprintf(" %s %.4f (max %.4f)", name, r.TV[i], r.TVMax[i])
	}
	return s
}

// project sums a joint [V^3] over the tokens not in keep (positions 0..2).
func project(joint []float64, keep ...int) []float64 {
	V := DistConfig.Vocab
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

// Compare checks counts (N samples) against the exact joint.
func Compare(counts, exact []float64) Report {
	var N float64
	for _, c := range counts {
		N += c
	}
	var r Report
	var restO, restE float64
	cells := 0
	for i, p := range exact {
		switch e := N * p; {
		case p == 0:
			r.Impossible += int(counts[i])
		case e >= 5:
			r.Chi2 += (counts[i] - e) * (counts[i] - e) / e
			cells++
		default:
			restO, restE = restO+counts[i], restE+e
		}
	}
	if restE > 0 {
		r.Chi2 += (restO - restE) * (restO - restE) / restE
		cells++
	}
	r.DF = cells - 1
	r.Chi2Max = chi2Quantile(r.DF, DistAlpha)
	for i, keep := range [][]int{{0}, {1}, {2}, {0, 1}} {
		pc, pe := project(counts, keep...), project(exact, keep...)
		bound := 0.0
		for j := range pe {
			r.TV[i] += math.Abs(pc[j]/N-pe[j]) / 2
			bound += math.Sqrt(pe[j]*(1-pe[j])/N) / 2
		}
		r.TVMax[i] = bound + math.Sqrt(math.Log(1/DistAlpha)/(2*N))
	}
	return r
}

// TwoSample is the chi-square homogeneity statistic of two samples of equal size over the
// cells of exact (pooled as in Compare), its threshold, and their joint-(t1, t2) TV with its
// threshold: E TV(a^, b^) <= 2B and TV moves by <= 1/N per sample of 2N, so
// P(TV > 2B + t) <= exp(-N t^2).
func TwoSample(a, b, exact []float64) (chi2, chi2Max, tv, tvMax float64) {
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
	return chi2, chi2Quantile(cells-1, DistAlpha), tv, tvMax + math.Sqrt(math.Log(1/DistAlpha)/N)
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

// Broken samplers (ref.Model.Verify) the checks must catch: "accept-all" (every draft
// passes), "recover-from-p" (a draft passes with probability p'(d), by a uniform of its own,
// rather than iff it is the row's draw, which then replaces a rejected one: the classic bug of
// rejection sampling with a one-hot q) and "keys-off-by-one" (in a step with drafts, row j
// keyed with the position of the token fed rather than the one produced, so a token reuses
// the Gumbel noise of the token before it).
var Broken = map[string]func(rows []float32, drafts []int, q []float32, p kernelref.SamplingParams, seed uint64, seq, pos0 uint32) []int{
	"accept-all": func(rows []float32, drafts []int, q []float32, p kernelref.SamplingParams, seed uint64, seq, pos0 uint32) []int {
		V := len(rows) / (len(drafts) + 1)
		return append(append([]int(nil), drafts...), kernelref.Sample(rows[len(drafts)*V:], p, seed, seq, pos0+uint32(len(drafts))))
	},
	"recover-from-p": recoverFromP,
	"keys-off-by-one": func(rows []float32, drafts []int, q []float32, p kernelref.SamplingParams, seed uint64, seq, pos0 uint32) []int {
		if len(drafts) > 0 {
			pos0--
		}
		out, _ := kernelref.RejectionSample(rows, drafts, q, p, seed, seq, pos0)
		return out
	},
}

// recoverFromP is kernelref.RejectionSample (non-greedy) with the classic bug: the token replacing
// a rejected draft is drawn from p' instead of the residual max(p' - q', 0).
func recoverFromP(rows []float32, drafts []int, q []float32, p kernelref.SamplingParams, seed uint64, seq, pos0 uint32) []int {
	V := len(rows) / (len(drafts) + 1)
	var out []int
	for j, d := range drafts {
		pos := pos0 + uint32(j)
		target := kernelref.ProcessedProbs(rows[j*V:(j+1)*V], p)
		qd := 1.0
		if q != nil {
			qd = float64(q[j*V+d])
		}
		u := float64(kernelref.RandUniform(seed, seq, pos, kernelref.RejectionDraw))
		if u < min(1, target[d]/qd) {
			out = append(out, d)
			continue
		}
		return append(out, kernelref.GumbelMax(target, seed, seq, pos))
	}
	return append(out, kernelref.Sample(rows[len(drafts)*V:], p, seed, seq, pos0+uint32(len(drafts))))
}
