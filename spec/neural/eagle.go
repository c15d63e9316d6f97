package neural

import (
	"fmt"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/weights"
)

func init() {
	for _, kind := range []string{weights.EagleKind1, weights.EagleKind3} {
		spec.Register(kind, func(cfg spec.Config, target *weights.Config) (spec.Checkpoint, error) {
			return openEagle(kind, cfg.Model, target)
		})
	}
}

// eagleCheckpoint is an EAGLE or EAGLE-3 head read from its folder and checked against the
// target's configuration; aux is the target layers it reads (EAGLE-3).
type eagleCheckpoint struct {
	dir string
	w   *weights.Eagle
	aux []int
}

func openEagle(kind, dir string, target *weights.Config) (*eagleCheckpoint, error) {
	w, err := weights.LoadEagle(dir, kind, target)
	if err != nil {
		return nil, err
	}
	if err := w.CheckTarget(target); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	c := &eagleCheckpoint{dir: dir, w: w}
	if kind == weights.EagleKind3 {
		if c.aux, err = w.AuxLayers(target.NLayers); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
	}
	return c, nil
}

func (c *eagleCheckpoint) Needs() spec.Needs {
	return spec.Needs{AuxLayers: c.aux, Features: true, KVWidth: c.w.Cfg.NKVHeads * c.w.Cfg.HeadDim, KVF32: true}
}

// Load uploads the head next to target, which must have been made with Needs().
func (c *eagleCheckpoint) Load(target *model.Model) (spec.Method, error) {
	h, err := model.NewEagle(target, c.w)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.dir, err)
	}
	return &EagleMethod{head: h, t: target}, nil
}

// EagleMethod is an EAGLE-1 ("eagle") or EAGLE-3 ("eagle3") head (SafeAILab/EAGLE) on the
// target's device: one decoder layer that reads the target's features of the accepted
// positions (EAGLE-1: the last hidden state after the final norm; EAGLE-3: the residual
// stream entering three layers), kept for it in each sequence's feature slot, and keeps a
// KV cache per sequence. For a greedy sequence it drafts the argmax (one-hot, Q nil); for one
// sampled at a temperature T it samples its drafts from softmax(logits / T) on the device and
// returns that distribution (Q), which the rejection sampler verifies against, so the output
// stays exactly the target's either way and more sampled drafts are accepted than one-hot
// ones. Every drafting sequence of a step in one submit.
type EagleMethod struct {
	head *model.Eagle
	t    *model.Model
}

// Name is "eagle" or "eagle3".
func (m *EagleMethod) Name() string { return m.head.Kind() }

// NewDrafter takes a feature slot of the target and starts the head's cache for it.
func (m *EagleMethod) NewDrafter() (spec.Drafter, error) {
	slot, err := m.t.NewSlot()
	if err != nil {
		return nil, err
	}
	seq, err := m.head.NewSeq(slot)
	if err != nil {
		m.t.ReleaseSlot(slot)
		return nil, err
	}
	return &eagleDrafter{m: m, slot: slot, seq: seq}, nil
}

// Propose catches each sequence's head cache up with the positions its target steps
// verified and drafts, all sequences in one submit (model.Eagle.Draft).
func (m *EagleMethod) Propose(ps []spec.Proposal) error {
	reqs := make([]model.EagleDraft, len(ps))
	for i, p := range ps {
		d, ok := p.Drafter.(*eagleDrafter)
		if !ok || d.m != m || d.seq == nil {
			return fmt.Errorf("neural: %s: a proposal for another method's drafter", m.Name())
		}
		reqs[i] = model.EagleDraft{Seq: d.seq, Ctx: p.Ctx, K: p.K, Sampling: p.Sampling}
	}
	if err := m.head.Draft(reqs); err != nil {
		return err
	}
	for i := range ps {
		ps[i].Drafts, ps[i].Q = reqs[i].Out, reqs[i].Q
	}
	return nil
}

// Release frees the head's device buffers.
func (m *EagleMethod) Release() { m.head.Release() }

// eagleDrafter is one sequence's head cache and feature slot. Accept does nothing: the next
// Propose drops the head's speculative rows and catches up.
type eagleDrafter struct {
	m    *EagleMethod
	slot batch.Slot
	seq  *model.EagleSeq
}

func (d *eagleDrafter) Keep() batch.Slot   { return d.slot }
func (d *eagleDrafter) Accept([]int) error { return nil }
func (d *eagleDrafter) Release() {
	if d.seq != nil {
		d.seq.Release()
		d.m.t.ReleaseSlot(d.slot)
		d.seq = nil
	}
}
