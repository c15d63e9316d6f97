package spec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/model"
)

// Metrics count what speculation did in one Decode.
type Metrics struct {
	Steps               int   // verify steps: target forward passes after the prefill
	Drafts              int   // steps that had at least one draft token
	DraftTokens         int   // draft tokens proposed (and verified)
	AcceptedTokens      int   // draft tokens the target accepted
	EmittedTokens       int   // tokens the verify steps produced (accepted + 1 each), before cutting at a stop token or maxNew; the prefill's token is not counted
	AcceptedPerPosition []int // index i: steps where draft i was accepted
	DraftedPerPosition  []int // index i: steps that drafted at least i+1 tokens
	// Where the time went: drafting (the drafter's Propose calls), and the target steps the
	// sequence took part in (wall time, shared with the other sequences of a batched step).
	DraftTime, StepTime time.Duration
}

// AcceptanceRate is the fraction of draft tokens accepted (0 with no drafts).
func (m Metrics) AcceptanceRate() float64 {
	if m.DraftTokens == 0 {
		return 0
	}
	return float64(m.AcceptedTokens) / float64(m.DraftTokens)
}

// MeanAcceptanceLength is the tokens produced per verify step, counting the recovered or
// bonus token: 1 without speculation, up to k+1 (vLLM's "mean acceptance length").
func (m Metrics) MeanAcceptanceLength() float64 {
	if m.Steps == 0 {
		return 0
	}
	return float64(m.EmittedTokens) / float64(m.Steps)
}

// FinishReason says why a generation ended: OpenAI's "stop" and "length", and the engine's
// own "context_full" and "cancelled".
type FinishReason string

// Finish reasons.
const (
	FinishStop        FinishReason = "stop"         // a stop token (not in the output), or the caller's emit said stop
	FinishLength      FinishReason = "length"       // maxNew tokens were generated
	FinishContextFull FinishReason = "context_full" // prompt plus output filled the model's context
	FinishCancelled   FinishReason = "cancelled"    // the context was cancelled (ctx.Err() says why)
)

// Output is what Decode produced.
type Output struct {
	Tokens  []int // the new tokens, without the stop token
	Metrics Metrics
	Finish  FinishReason
}

// Decode generates up to maxNew tokens after prompt on the empty target t, speculating with
// d (nil: plain decoding, one token per forward pass) k tokens at a time, and returns the new
// tokens and why it stopped. It reads top to bottom as the algorithm:
//
//	ctx = prompt;  ctx += t.Forward(prompt)          prefill: the first new token
//	loop:
//	    drafts, q = d.Propose(ctx, k)                 k clipped to the room left
//	    out = t.Forward([last, drafts...], q)         ONE target pass verifies all drafts and
//	                                                  the device's rejection sampler returns the
//	                                                  accepted drafts + 1 recovered/bonus token
//	    t.Truncate(KV of ctx + last + accepted)       drop the rejected drafts' KV
//	    ctx += out;  d.Accept(ctx)                    the drafter rolls back too
//
// Between steps the target's KV holds every token of ctx but the newest (which the next
// step feeds): t.Len() == len(ctx)-1. The random key of the token at position p (0-based in
// ctx) is (s.Seed, s.SeqID, p) whether it is sampled, accepted or recovered, so for a seed
// the output does not depend on k in greedy mode, and it is distributed exactly as plain
// sampling's in any mode.
//
// It stops after maxNew tokens (the output is cut to exactly maxNew: FinishLength), at a
// stop token (which is NOT included in the returned tokens, nor passed to emit: FinishStop),
// when emit returns false (the token emit was given is included: FinishStop), when the
// sequence fills the context (prompt plus output never exceed t.MaxSeq() tokens:
// FinishContextFull), or, within one step, when cx is cancelled (FinishCancelled, with the
// tokens so far and no error). emit, if not nil, sees each returned token as soon as it is
// known. On an error the output so far comes back too.
func Decode(cx context.Context, t Target, d Drafter, prompt []int, k int, maxNew int, s model.Sampling, stop []int,
	emit func(tok int) bool) (Output, error) {
	var o Output
	m := &o.Metrics
	switch {
	case len(prompt) == 0:
		return o, fmt.Errorf("spec: %w: empty prompt", model.ErrBadInput)
	case len(prompt) >= t.MaxSeq():
		return o, fmt.Errorf("spec: %w: a prompt of %d tokens leaves no room in a context of %d",
			runtime.ErrContextFull, len(prompt), t.MaxSeq())
	case t.Len() != 0:
		return o, fmt.Errorf("spec: the target already holds %d tokens", t.Len())
	case k < 0 || k > MaxSpeculativeTokens:
		return o, fmt.Errorf("spec: %w: %d speculative tokens, want 0..%d", model.ErrBadInput, k, MaxSpeculativeTokens)
	case maxNew <= 0:
		return o, fmt.Errorf("spec: %w: max new tokens %d, want at least 1", model.ErrBadInput, maxNew)
	}
	// push appends the target's tokens to the output; it reports whether decoding is over.
	push := func(toks []int) bool {
		for _, tok := range toks {
			if slices.Contains(stop, tok) {
				o.Finish = FinishStop
				return true
			}
			o.Tokens = append(o.Tokens, tok)
			if emit != nil && !emit(tok) {
				o.Finish = FinishStop
				return true
			}
			if len(o.Tokens) == maxNew {
				o.Finish = FinishLength
				return true
			}
		}
		return false
	}
	if cx.Err() != nil {
		o.Finish = FinishCancelled
		return o, nil
	}

	// Prefill: the prompt's KV and the first new token.
	ctx := slices.Clip(slices.Clone(prompt))
	first, err := t.Forward(prompt, 0, nil, s)
	if err != nil {
		return o, err
	}
	ctx = append(ctx, first...)
	if err := accept(d, ctx); err != nil || push(first) {
		return o, err
	}

	for {
		if len(ctx) >= t.MaxSeq() {
			o.Finish = FinishContextFull
			return o, nil
		}
		if cx.Err() != nil {
			o.Finish = FinishCancelled
			return o, nil
		}
		// Draft: at most k tokens, no more than the output and the context have room for
		// (a step emits up to len(drafts)+1 tokens).
		var drafts []int
		var q []float32
		if kk := min(k, maxNew-len(o.Tokens)-1, t.MaxSeq()-len(ctx)-1); d != nil && kk > 0 {
			t0 := time.Now()
			drafts, q, err = d.Propose(ctx, kk)
			m.DraftTime += time.Since(t0)
			if err != nil {
				return o, fmt.Errorf("spec: %s drafter: %w", d.Name(), err)
			}
			if err := checkDrafts(drafts, q, kk, t.Vocab()); err != nil {
				return o, fmt.Errorf("spec: %s drafter: %w", d.Name(), err)
			}
			if len(drafts) == 0 {
				q = nil
			}
		}

		// Verify: one forward pass over [last, drafts...]; the device samples.
		lenBefore := t.Len() // == len(ctx)-1
		tokens := append([]int{ctx[len(ctx)-1]}, drafts...)
		t0 := time.Now()
		got, err := t.Forward(tokens, len(drafts), q, s)
		m.StepTime += time.Since(t0)
		if err != nil {
			return o, err
		}
		accepted := len(got) - 1
		if accepted < 0 || accepted > len(drafts) || !slices.Equal(got[:accepted], drafts[:accepted]) {
			return o, fmt.Errorf("spec: the target returned %v for drafts %v", got, drafts)
		}

		// Keep the KV of the last token and the accepted drafts; drop the rejected ones.
		t.Truncate(lenBefore + 1 + accepted)
		ctx = append(ctx, got...)
		m.Count(len(drafts), accepted)
		if err := accept(d, ctx); err != nil || push(got) {
			return o, err
		}
	}
}

// Count records one verify step of nDraft drafts of which the first accepted passed.
func (m *Metrics) Count(nDraft, accepted int) {
	m.Steps++
	m.EmittedTokens += accepted + 1
	if nDraft == 0 {
		return
	}
	m.Drafts++
	m.DraftTokens += nDraft
	m.AcceptedTokens += accepted
	for len(m.AcceptedPerPosition) < nDraft {
		m.AcceptedPerPosition = append(m.AcceptedPerPosition, 0)
		m.DraftedPerPosition = append(m.DraftedPerPosition, 0)
	}
	for i := range nDraft {
		m.DraftedPerPosition[i]++
	}
	for i := range accepted {
		m.AcceptedPerPosition[i]++
	}
}

// AcceptanceAt is, for each draft position i, the fraction of the steps that drafted that far
// whose draft i was accepted.
func (m Metrics) AcceptanceAt() []float64 {
	out := make([]float64, len(m.AcceptedPerPosition))
	for i, n := range m.AcceptedPerPosition {
		if i < len(m.DraftedPerPosition) && m.DraftedPerPosition[i] > 0 {
			out[i] = float64(n) / float64(m.DraftedPerPosition[i])
		}
	}
	return out
}

func accept(d Drafter, ctx []int) error {
	if d == nil {
		return nil
	}
	if err := d.Accept(ctx); err != nil {
		return fmt.Errorf("spec: %s drafter: %w", d.Name(), err)
	}
	return nil
}

var errBadDrafts = errors.New("bad drafts")

// checkDrafts checks what a drafter proposed against the request.
func checkDrafts(drafts []int, q []float32, k, vocab int) error {
	if len(drafts) > k {
		return fmt.Errorf("%w: %d drafts, %d asked for", errBadDrafts, len(drafts), k)
	}
	for _, tok := range drafts {
		if tok < 0 || tok >= vocab {
			return fmt.Errorf("%w: draft token %d outside the vocabulary of %d", errBadDrafts, tok, vocab)
		}
	}
	if q != nil && len(drafts) > 0 && len(q) != len(drafts)*vocab {
		return fmt.Errorf("%w: q has %d values for %d drafts of vocabulary %d", errBadDrafts, len(q), len(drafts), vocab)
	}
	return nil
}
