package sched

import (
	"fmt"
	"slices"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/spec/grammar"
)

// Structured outputs: a request with a grammar samples each row under the mask of the tokens
// its grammar allows after the row's prefix, as vLLM applies one bitmask per speculative
// position. Row 0's prefix is the output so far; row j's adds the drafts before it, so each
// verified row is masked exactly as plain decoding would mask it at that position, and the
// recovered or bonus token is drawn from the masked target distribution. A draft the mask
// leaves out could never be accepted, so the drafts are cut before it: for one-hot drafts the
// row then samples what rejecting it would have; for drafts with q, the kept drafts are
// samples of q renormalised over the allowed tokens, which the sampler verifies against.
// Either way the output has the constrained target's distribution with any drafter.

// maskBeforeDrafts breaks the rule above (every row gets row 0's mask): the distribution
// test's broken variant.
var maskBeforeDrafts = false

// constrain sets the masks of the step's sampled rows of jobs with a grammar, cutting drafts
// where they leave it. A scored prompt chunk is not the output: it stays unmasked.
func (s *Scheduler) constrain(steps []batch.SeqStep, in []*job) {
	for i := range steps {
		st, j := &steps[i], in[i]
		if j.req.Grammar == nil || !st.Sample || st.Score {
			continue
		}
		g := j.req.Grammar
		W := batch.MaskWords(s.lim.Vocab)
		n := len(st.Tokens)
		drafts := st.Tokens[n-st.NDraft:]
		mark := g.Mark()
		masks := make([]uint32, 0, (len(drafts)+1)*W)
		row := func() []uint32 {
			allowed, end := g.Mask()
			m := slices.Clone(allowed)
			for _, t := range j.req.Stop {
				if t >= 0 && t < s.lim.Vocab {
					if end {
						m[t/32] |= 1 << (t % 32)
					} else {
						m[t/32] &^= 1 << (t % 32)
					}
				}
			}
			return m
		}
		masks = append(masks, row()...)
		keep := len(drafts)
		for k, d := range drafts {
			prev := masks[k*W : (k+1)*W]
			if !grammar.Allowed(prev, d) {
				keep = k
				break
			}
			if slices.Contains(j.req.Stop, d) { // the output would end there: nothing follows
				keep = k + 1
				break
			}
			if g.Accept(d) != nil {
				keep = k
				break
			}
			if maskBeforeDrafts {
				masks = append(masks, masks[:W]...)
			} else {
				masks = append(masks, row()...)
			}
		}
		g.Reset(mark)
		if keep < len(drafts) {
			st.Tokens = st.Tokens[:n-len(drafts)+keep]
			st.NDraft = keep
		}
		st.Mask = masks[:(keep+1)*W]
	}
}

// acceptGrammar moves a job's grammar past an emitted token (not a stop token).
func acceptGrammar(j *job, tok int) error {
	if j.req.Grammar == nil {
		return nil
	}
	if err := j.req.Grammar.Accept(tok); err != nil {
		return fmt.Errorf("sched: %w", err)
	}
	return nil
}

// grammarDone reports whether a job's grammar has matched a whole output that nothing can
// continue (the request then ends as at a stop token).
func grammarDone(j *job) bool {
	g := j.req.Grammar
	if g == nil {
		return false
	}
	allowed, end := g.Mask()
	return end && !slices.ContainsFunc(allowed, func(w uint32) bool { return w != 0 })
}
