package kernelref

import "fmt"

// RejectionDraw is the draw index of the acceptance uniform in RejectionSample. Token
// draws use the token id as the draw index, so this one never collides with them.
const RejectionDraw = 0xFFFFFFFF

// RejectionSample verifies k draft tokens against the target model, as speculative
// decoding's modified rejection sampling (Leviathan et al. 2023; Chen et al. 2023) in
// the semantics of vLLM's rejection_sampler.py. The output tokens are distributed
// exactly as if each had been sampled from the target with Sample.
//
//	targetLogits [k+1, V]  target logits: row j scores the token at position pos0+j,
//	                       i.e. row j verifies drafts[j], and row k follows the last draft
//	drafts       [k]       the draft tokens, drafts[j] at position pos0+j
//	draftProbs   [k, V]    the drafter's (already processed) distributions q'_j, or nil
//	                       for a deterministic drafter (q'_j one-hot on drafts[j])
//
// With p'_j = ProcessedProbs(targetLogits row j, p):
//
//   - Accepted tokens: the longest prefix of drafts that passes verification. In greedy
//     mode (Temperature <= 0) draft j passes iff drafts[j] == Argmax(row j). For a
//     deterministic drafter (draftProbs nil) draft j passes iff it is the token Sample
//     draws at its position, Sample(row j, p, seed, seq, pos0+j), and that sample replaces
//     it otherwise: a draft is accepted with probability p'_j(d), as min(1, p'/q') gives for a
//     one-hot q', and a rejected one is replaced by a sample of p'_j without d, as the
//     residual norm(max(p'_j - q'_j, 0)) is; so the output is token for token what Sample
//     gives with no drafts, whatever the drafts (speculation, batching and the draft length
//     never change a seeded text). With draftProbs, u = RandUniform(seed, seq, pos0+j,
//     RejectionDraw) and draft j passes iff u < min(1, p'_j(d) / q'_j(d)) for d = drafts[j].
//     If q'_j(d) == 0 (a drafter never proposes such a token) the ratio is taken as 1 when
//     p'_j(d) > 0 (accept) and 0 otherwise (reject); vLLM instead always rejects a draft
//     with q'_j(d) == 0.
//   - Recovered token: at the first rejected draft j, the token that replaces it, drawn
//     from the residual distribution norm(max(p'_j - q'_j, 0)) by the Gumbel-max trick:
//     argmax over i with a positive residual of log(residual[i]) + Gumbel(seed, seq,
//     pos0+j, uint32(i)). If the residual is zero everywhere it is drawn from p'_j the
//     same way (in greedy mode it is Argmax(row j)). Verification stops there.
//   - Bonus token: when all k drafts are accepted, the token after them, sampled from
//     row k exactly as Sample(row k, p, seed, seq, pos0+k) would.
//
// It returns out = the accepted drafts followed by exactly one recovered or bonus token
// (so 1 <= len(out) <= k+1) and nAccepted = len(out) - 1.
func RejectionSample(targetLogits []float32, drafts []int, draftProbs []float32, p SamplingParams,
	seed uint64, seq uint32, pos0 uint32) (accepted []int, nAccepted int) {
	k := len(drafts)
	if len(targetLogits)%(k+1) != 0 {
		panic(fmt.Sprintf("kernelref.RejectionSample: %d target logits for %d drafts", len(targetLogits), k))
	}
	V := len(targetLogits) / (k + 1)
	if draftProbs != nil {
		check("RejectionSample draftProbs", draftProbs, k*V)
	}
	row := func(j int) []float32 { return targetLogits[j*V : (j+1)*V] } // [V]

	out := make([]int, 0, k+1)
	for j, d := range drafts {
		pos := pos0 + uint32(j)
		if p.Greedy() {
			best := Argmax(row(j))
			if d != best {
				return append(out, best), j // recovered
			}
			out = append(out, d)
			continue
		}

		target := ProcessedProbs(row(j), p) // p'_j [V]
		if draftProbs == nil {              // one-hot q': the draft passes iff it is the sample
			tok := GumbelMax(target, seed, seq, pos)
			if tok != d {
				return append(out, tok), j
			}
			out = append(out, d)
			continue
		}
		draft := make([]float64, V) // q'_j [V]
		for i := range draft {
			draft[i] = float64(draftProbs[j*V+i])
		}

		ratio := 0.0
		switch {
		case draft[d] > 0:
			ratio = target[d] / draft[d]
		case target[d] > 0:
			ratio = 1
		}
		u := float64(RandUniform(seed, seq, pos, RejectionDraw))
		if u < min(1, ratio) {
			out = append(out, d)
			continue
		}

		residual := make([]float64, V) // max(p'_j - q'_j, 0) [V]
		for i := range residual {
			residual[i] = max(target[i]-draft[i], 0)
		}
		tok := GumbelMax(residual, seed, seq, pos)
		if tok < 0 {
			tok = GumbelMax(target, seed, seq, pos)
		}
		return append(out, tok), j // recovered
	}
	return append(out, Sample(row(k), p, seed, seq, pos0+uint32(k))), k // bonus
}
