package neural

import (
	"fmt"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/weights"
)

func init() {
	spec.Register("medusa", func(cfg spec.Config, target *weights.Config) (spec.Checkpoint, error) {
		w, err := weights.LoadMedusa(cfg.Model, target)
		if err != nil {
			return nil, err
		}
		switch {
		case w.Dim != target.Dim:
			return nil, fmt.Errorf("%s: %w: Medusa heads of hidden size %d for a target of hidden size %d", cfg.Model, batch.ErrBadInput, w.Dim, target.Dim)
		case w.Out != nil && w.Vocab != target.Vocab:
			return nil, fmt.Errorf("%s: %w: Medusa output layers of %d tokens for a target vocabulary of %d", cfg.Model, batch.ErrBadInput, w.Vocab, target.Vocab)
		}
		return medusaCheckpoint{dir: cfg.Model, w: w}, nil
	})
}

type medusaCheckpoint struct {
	dir string
	w   *weights.Medusa
}

func (c medusaCheckpoint) Needs() spec.Needs { return spec.Needs{Features: true} }

func (c medusaCheckpoint) Load(target *model.Model) (spec.Method, error) {
	heads, err := model.NewMedusa(target, c.w)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.dir, err)
	}
	return &MedusaMethod{heads: heads, t: target}, nil
}

// MedusaMethod drafts with Medusa heads (FasterDecoding/Medusa) on the target's device: K
// small heads on the target's last hidden state, head k guessing the token k+1 places after
// the newest one. The heads read the row of the target's last step that produced the newest
// token (position len(ctx)-2), kept in the sequence's feature slot. Each head gives one
// draft: its argmax for a greedy sequence (Q nil: one-hot), a draw from softmax(logits / T)
// for one sampled at a temperature T, with that distribution as Q; the drafts form a chain,
// verified in one target pass (the Medusa paper's tree of top-k candidates is not used).
// Only the heads asked for run; every drafting sequence of a step in one submit.
type MedusaMethod struct {
	heads *model.Medusa
	t     *model.Model
}

// Name is "medusa".
func (m *MedusaMethod) Name() string { return "medusa" }

// NewDrafter takes a feature slot of the target for a new sequence.
func (m *MedusaMethod) NewDrafter() (spec.Drafter, error) {
	slot, err := m.t.NewSlot()
	if err != nil {
		return nil, err
	}
	return &medusaDrafter{m: m, slot: slot}, nil
}

// Propose runs the first K heads for each proposal whose slot holds its position.
func (m *MedusaMethod) Propose(ps []spec.Proposal) error {
	reqs := make([]model.MedusaDraft, len(ps))
	for i, p := range ps {
		d, ok := p.Drafter.(*medusaDrafter)
		if !ok || d.m != m || d.slot == 0 {
			return fmt.Errorf("neural: medusa: a proposal for another method's drafter")
		}
		pos := len(p.Ctx) - 2
		reqs[i] = model.MedusaDraft{Slot: d.slot, Pos: pos, Sampling: p.Sampling}
		if pos0, n := m.t.SlotRows(d.slot); pos >= pos0 && pos < pos0+n {
			reqs[i].N = p.K
		}
	}
	if err := m.heads.Draft(reqs); err != nil {
		return err
	}
	for i := range ps {
		ps[i].Drafts, ps[i].Q = reqs[i].Out, reqs[i].Q
	}
	return nil
}

// Release frees the heads' device buffers.
func (m *MedusaMethod) Release() { m.heads.Release() }

// medusaDrafter is one sequence's feature slot: the heads keep no other state.
type medusaDrafter struct {
	m    *MedusaMethod
	slot batch.Slot
}

func (d *medusaDrafter) Keep() batch.Slot   { return d.slot }
func (d *medusaDrafter) Accept([]int) error { return nil }
func (d *medusaDrafter) Release() {
	if d.slot != 0 {
		d.m.t.ReleaseSlot(d.slot)
		d.slot = 0
	}
}
