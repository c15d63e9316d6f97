package distill

import (
	"fmt"
	"slices"

	"github.com/wspec/wspec/spec"
)

// The acceptance of a drafter, measured on the CPU by replaying greedy chain speculative
// decoding as the scheduler runs it. At temperature 0 the target's output does not depend on
// the drafts, so the target runs once per prompt (Reference) and every drafter and k is
// replayed against that output, drafting from exactly the features the target computes for
// the positions it verified; the counts are spec.Metrics, the scheduler's own (sim_test
// checks them against real speculative decoding through the scheduler, replay_test.go).

// EvalSeq is the target's greedy output for one prompt, with its features at every position.
type EvalSeq struct {
	Prompt int       // prompt length (BOS included)
	Tokens []int     // the prompt, then the greedy tokens (ending with a stop token when one came)
	Hidden []float32 // [len(Tokens), dim] the residual after the last layer, before the final norm
	Aux    []float32 // [len(Tokens), len(aux), dim] the residuals entering the aux layers
}

// Reference decodes each prompt greedily with target t for at most maxNew tokens (stopping
// after a stop token, or when the context is full), recording features of every position.
func Reference(t *Llama, prompts [][]int, maxNew int, aux []int) ([]*EvalSeq, error) {
	c := t.Cfg
	dim, A := c.Dim, len(aux)
	type slot struct {
		seq   *EvalSeq
		cache *KVCache
		fed   int
		done  bool
	}
	var slots []*slot
	for _, p := range prompts {
		if len(p) == 0 || len(p) >= c.MaxSeq {
			return nil, fmt.Errorf("distill: a prompt of %d tokens for a context of %d", len(p), c.MaxSeq)
		}
		slots = append(slots, &slot{seq: &EvalSeq{Prompt: len(p), Tokens: slices.Clone(p)}, cache: t.NewCache()})
	}
	for {
		var rows []Row
		var act []*slot
		for _, s := range slots {
			if !s.done {
				rows = append(rows, Row{Cache: s.cache, Token: s.seq.Tokens[s.fed]})
				act = append(act, s)
			}
		}
		if len(rows) == 0 {
			break
		}
		out, err := t.Forward(rows, aux, true)
		if err != nil {
			return nil, err
		}
		for i, s := range act {
			s.seq.Hidden = append(s.seq.Hidden, out.Hidden[i*dim:(i+1)*dim]...)
			s.seq.Aux = append(s.seq.Aux, out.Aux[i*A*dim:(i+1)*A*dim]...)
			s.fed++
			if s.fed < len(s.seq.Tokens) {
				continue // still in the prompt
			}
			n := len(s.seq.Tokens)
			last := s.seq.Tokens[n-1]
			if n-s.seq.Prompt >= maxNew || n >= c.MaxSeq || (n > s.seq.Prompt && slices.Contains(c.EOS, last)) {
				s.done = true
				continue
			}
			s.seq.Tokens = append(s.seq.Tokens, argmax(out.Logits[i*c.Vocab:(i+1)*c.Vocab]))
		}
	}
	var seqs []*EvalSeq
	for _, s := range slots {
		seqs = append(seqs, s.seq)
	}
	return seqs, nil
}

// SimDrafter is a drafter on the CPU, on a reference sequence: Propose sees ctx (a prefix of
// seq.Tokens) and may read the target's features of positions up to len(ctx)-2, which the
// target computed in its last verify step; Accept follows each step. The tests also run it
// through the scheduler (SimMethod in replay_test.go).
type SimDrafter interface {
	Name() string
	Begin(seq *EvalSeq)
	Propose(ctx []int, k int) []int
	Accept(ctx []int)
}

// Simulate replays every reference sequence with drafter d proposing k tokens per step (fewer
// where the output or the context has no room, as the scheduler plans), greedily, for at
// most maxNew new tokens, and counts the acceptance. stop is the target's
// stop tokens, maxSeq its context.
func Simulate(d SimDrafter, seqs []*EvalSeq, k, maxNew, maxSeq int, stop []int) spec.Metrics {
	var a spec.Metrics
	for _, seq := range seqs {
		ref := seq.Tokens
		P := seq.Prompt
		if len(ref) <= P {
			continue
		}
		d.Begin(seq)
		ctx := slices.Clone(ref[:P+1])
		out := 0
		// push counts the emitted tokens; it reports whether decoding is over.
		push := func(toks []int) bool {
			for _, tok := range toks {
				if slices.Contains(stop, tok) {
					return true
				}
				if out++; out == maxNew {
					return true
				}
			}
			return false
		}
		d.Accept(ctx)
		if push(ctx[P:]) {
			continue
		}
		for len(ctx) < maxSeq {
			var drafts []int
			if kk := min(k, spec.DraftRoom(maxNew, out, maxSeq, len(ctx))); kk > 0 {
				drafts = d.Propose(ctx, kk)
			}
			acc := 0
			for acc < len(drafts) && len(ctx)+acc < len(ref) && drafts[acc] == ref[len(ctx)+acc] {
				acc++
			}
			n := len(ctx)
			end := n+acc >= len(ref) // the drafts matched through the reference's stop token
			if end {
				acc = len(ref) - n
			}
			got := ref[n:min(n+acc+1, len(ref))]
			a.Count(len(drafts), acc)
			ctx = append(ctx, got...)
			d.Accept(ctx)
			if push(got) || end {
				break
			}
		}
	}
	return a
}
