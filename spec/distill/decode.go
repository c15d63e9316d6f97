package distill

import "slices"

// SpecDecode is greedy chain speculative decoding on the CPU, the way spec.Decode runs it
// on the device, with the target t really verifying: a prefill, then steps that feed
// [newest, drafts...] in one forward pass, keep the drafts up to the first that differs
// from the target's argmax plus the target's own token there, and drop the rest from the
// KV cache. The drafter reads the features the verify steps computed (seq grows with each
// step's accepted positions). It returns the new tokens (stop token excluded) and the
// acceptance, which for a correct drafter equal Reference's tokens and Simulate's counts.
func SpecDecode(t *Llama, d SimDrafter, prompt []int, k, maxNew int, aux []int) ([]int, Acceptance) {
	c := t.Cfg
	dim, A := c.Dim, len(aux)
	a := Acceptance{K: k, AcceptedPerPosition: make([]int, k), DraftedPerPosition: make([]int, k)}
	seq := &EvalSeq{Prompt: len(prompt)}
	cache := t.NewCache()
	// forward feeds toks and keeps the features of their first keep rows.
	forward := func(toks []int) *Outputs {
		rows := make([]Row, len(toks))
		for i, tok := range toks {
			rows[i] = Row{Cache: cache, Token: tok}
		}
		out, err := t.Forward(rows, aux, true)
		if err != nil {
			return nil
		}
		return out
	}
	record := func(out *Outputs, n int) {
		seq.Hidden = append(seq.Hidden, out.Hidden[:n*dim]...)
		seq.Aux = append(seq.Aux, out.Aux[:n*A*dim]...)
	}
	var result []int
	push := func(toks []int) bool {
		for _, tok := range toks {
			if slices.Contains(c.EOS, tok) {
				return true
			}
			if result = append(result, tok); len(result) == maxNew {
				return true
			}
		}
		return false
	}
	out := forward(prompt)
	record(out, len(prompt))
	first := argmax(out.Logits[(len(prompt)-1)*c.Vocab:])
	seq.Tokens = append(slices.Clone(prompt), first)
	d.Begin(seq)
	d.Accept(seq.Tokens)
	if push([]int{first}) {
		return result, a
	}
	for len(seq.Tokens) < c.MaxSeq {
		ctx := seq.Tokens
		var drafts []int
		if kk := min(k, maxNew-len(result)-1, c.MaxSeq-len(ctx)-1); kk > 0 {
			drafts = d.Propose(ctx, kk)
		}
		n := cache.Len()
		out := forward(append([]int{ctx[len(ctx)-1]}, drafts...))
		acc := 0
		for acc < len(drafts) && argmax(out.Logits[acc*c.Vocab:(acc+1)*c.Vocab]) == drafts[acc] {
			acc++
		}
		got := append(slices.Clone(drafts[:acc]), argmax(out.Logits[acc*c.Vocab:(acc+1)*c.Vocab]))
		cache.Truncate(n + 1 + acc)
		record(out, 1+acc)
		a.step(len(drafts), acc)
		seq.Tokens = append(seq.Tokens, got...)
		d.Accept(seq.Tokens)
		if push(got) {
			break
		}
	}
	return result, a
}
