package distill

import (
	"math"

	"github.com/wspec/wspec/weights"
)

// SampledAcceptance measures what sampling its drafts would be worth to an EAGLE head at a
// temperature: over the reference sequences, at every position, the chance that the head's
// first draft is accepted when it is its argmax (one-hot q, accepted with probability p(d),
// what wspec's drafters do) and when it is sampled from its distribution q (accepted with
// probability sum_i min(p_i, q_i) = 1 - TV(p, q), what returning q to the sampler allows), p
// and q being the target's and the head's softmax at temp. The head reads the target's
// features of every earlier position (the catch-up of a head that drafted at every step).
func SampledAcceptance(h *EagleHead, t *Llama, seqs []*EvalSeq, temp float64) (oneHot, sampled float64, n int) {
	c := t.Cfg
	H := c.Dim
	for _, seq := range seqs {
		N := len(seq.Tokens)
		if N < 3 {
			continue
		}
		// The target's logits at every position (row p predicts token p+1).
		cache := t.NewCache()
		rows := make([]Row, N)
		for i, tok := range seq.Tokens {
			rows[i] = Row{Cache: cache, Token: tok}
		}
		out, err := t.Forward(rows, nil, true)
		if err != nil {
			continue
		}
		// The head's first-depth logits at every position: row p takes token p+1 and the
		// feature of p, and drafts token p+2.
		width, feats := H, make([]float32, (N-1)*H)
		if h.W.Kind == weights.EagleKind3 {
			width, feats = 3*H, seq.Aux[:(N-1)*3*H]
		} else {
			rmsNorm(feats, seq.Hidden[:(N-1)*H], t.W.Norm, nil, N-1, H, c.RMSEps)
		}
		q, _ := h.NewState().Forward(seq.Tokens[1:], feats, width)
		Vq := len(q) / (N - 1)
		for p := max(seq.Prompt-1, 0); p+2 < N; p++ {
			pT := softmaxT(out.Logits[(p+1)*c.Vocab:(p+2)*c.Vocab], temp)
			qd := softmaxT(q[p*Vq:(p+1)*Vq], temp)
			best, overlap := 0, 0.0
			for i, v := range qd {
				tok := i
				if h.W.D2T != nil {
					tok += int(h.W.D2T[i])
				}
				overlap += math.Min(v, pT[tok])
				if v > qd[best] {
					best = i
				}
			}
			tok := best
			if h.W.D2T != nil {
				tok += int(h.W.D2T[best])
			}
			oneHot += pT[tok]
			sampled += overlap
			n++
		}
	}
	if n > 0 {
		oneHot, sampled = oneHot/float64(n), sampled/float64(n)
	}
	return oneHot, sampled, n
}

// softmaxT is softmax(logits / temp) in float64.
func softmaxT(logits []float32, temp float64) []float64 {
	out := make([]float64, len(logits))
	mx := math.Inf(-1)
	for _, l := range logits {
		mx = math.Max(mx, float64(l)/temp)
	}
	var sum float64
	for i, l := range logits {
		out[i] = math.Exp(float64(l)/temp - mx)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}
