package distill

import (
	"fmt"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/spec"
)

// The CPU drafters verified for real, in the tests: the scheduler (spec/sched, the one loop)
// runs them as a spec.Method on a CPU target, ref.Model (the reference of the device's step)
// over the target's forward pass here, so that Simulate's counts can be checked against real
// speculative decoding. Test code: runtime/ref stays out of the binary.

// cpuSeq is one sequence of the target's forward pass on the CPU (a ref.SeqState).
type cpuSeq struct {
	m     *Llama
	cache *KVCache
	aux   []int
}

func (s *cpuSeq) Len() int       { return s.cache.Len() }
func (s *cpuSeq) Truncate(n int) { s.cache.Truncate(n) }

func (s *cpuSeq) Forward(tokens []int) ([]float32, []float32) {
	rows := make([]Row, len(tokens))
	for i, t := range tokens {
		rows[i] = Row{Cache: s.cache, Token: t}
	}
	out, err := s.m.Forward(rows, s.aux, true)
	if err != nil { // the reference step checked the context: a broken invariant
		panic(fmt.Sprintf("distill: a step the reference model let through: %v", err))
	}
	if len(s.aux) > 0 {
		return out.Logits, out.Aux
	}
	return out.Logits, out.Hidden
}

// NewCPUTarget is a scheduler's Target for t on the CPU, keeping for each drafting sequence
// the features its drafter reads: the residual streams entering the aux layers, or without
// them the residual after the last layer. Its steps take one prompt whole (up to t's context).
func NewCPUTarget(t *Llama, aux []int) *ref.Model {
	const seqs, pageSize = 4, 16
	lim := batch.Limits{MaxSeqs: seqs, MaxLogitRows: 64, MaxDraft: spec.MaxSpeculativeTokens, StepRows: t.Cfg.MaxSeq}
	pages := seqs * ((t.Cfg.MaxSeq+pageSize-1)/pageSize + 1)
	return ref.NewModelWith(t.Cfg, pages, pageSize, lim, ref.ModelOptions{AuxLayers: aux, FeatureSlots: seqs,
		NewState: func() ref.SeqState { return &cpuSeq{m: t, cache: t.NewCache(), aux: aux} }})
}

// SimMethod runs SimDrafters as a spec.Method on a CPU target (NewCPUTarget): each sequence's
// drafter, made by New, sees an EvalSeq that grows, after each step, with the tokens and the
// target's features of the positions the step verified, read from the sequence's slot.
type SimMethod struct {
	Target *ref.Model
	New    func() SimDrafter
	Aux    bool // the features are aux streams (EAGLE-3), not the last hidden state
}

func (m *SimMethod) Name() string { return "cpu" }
func (m *SimMethod) Release()     {}

// NewDrafter starts a drafter and takes a feature slot.
func (m *SimMethod) NewDrafter() (spec.Drafter, error) {
	slot, err := m.Target.NewSlot()
	if err != nil {
		return nil, err
	}
	d := &simDrafter{m: m, d: m.New(), slot: slot, seq: &EvalSeq{}}
	return d, nil
}

// Propose asks each proposal's SimDrafter for its drafts.
func (m *SimMethod) Propose(ps []spec.Proposal) error {
	for i, p := range ps {
		d, ok := p.Drafter.(*simDrafter)
		if !ok {
			return fmt.Errorf("distill: a proposal for another method's drafter")
		}
		ps[i].Drafts, ps[i].Q = d.d.Propose(p.Ctx, p.K), nil
	}
	return nil
}

// simDrafter is one sequence's SimDrafter and the EvalSeq it reads.
type simDrafter struct {
	m    *SimMethod
	d    SimDrafter
	slot batch.Slot
	seq  *EvalSeq
	rows int // positions whose features seq holds
}

func (d *simDrafter) Keep() batch.Slot { return d.slot }
func (d *simDrafter) Release()         { d.m.Target.ReleaseSlot(d.slot) }

// Accept extends the EvalSeq with the features of the positions the last step verified
// (they precede ctx's newest token), then tells the SimDrafter.
func (d *simDrafter) Accept(ctx []int) error {
	pos0, n, feats := d.m.Target.Slot(d.slot)
	have := d.rows
	if len(d.seq.Tokens) == 0 {
		d.seq.Prompt = len(ctx) - 1
		d.d.Begin(d.seq)
	}
	if have < pos0 || len(ctx)-1 > pos0+n {
		return fmt.Errorf("distill: the replay needs every position's features: the slot holds %d+%d, the sequence %d of %d",
			pos0, n, have, len(ctx))
	}
	width := len(feats) / max(n, 1)
	for p := have; p < len(ctx)-1; p++ {
		row := feats[(p-pos0)*width : (p-pos0+1)*width]
		if d.m.Aux {
			d.seq.Aux = append(d.seq.Aux, row...)
		} else {
			d.seq.Hidden = append(d.seq.Hidden, row...)
		}
	}
	d.rows = max(d.rows, len(ctx)-1)
	d.seq.Tokens = append(d.seq.Tokens[:0], ctx...)
	d.d.Accept(ctx)
	return nil
}
