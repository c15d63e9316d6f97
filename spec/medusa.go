package spec

import (
	"fmt"

	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/weights"
)

func init() {
	Register("medusa", func(cfg Config, target *weights.Config) (Checkpoint, error) {
		w, err := weights.LoadMedusa(cfg.Model)
		if err != nil {
			return nil, err
		}
		switch {
		case w.Dim != target.Dim:
			return nil, fmt.Errorf("%s: %w: Medusa heads of hidden size %d for a target of hidden size %d", cfg.Model, model.ErrBadInput, w.Dim, target.Dim)
		case w.Out != nil && w.Vocab != target.Vocab:
			return nil, fmt.Errorf("%s: %w: Medusa output layers of %d tokens for a target vocabulary of %d", cfg.Model, model.ErrBadInput, w.Vocab, target.Vocab)
		}
		return medusaCheckpoint{dir: cfg.Model, w: w}, nil
	})
}

type medusaCheckpoint struct {
	dir string
	w   *weights.Medusa
}

func (c medusaCheckpoint) AuxLayers() []int { return nil }

func (c medusaCheckpoint) Load(target *model.Model) (Method, error) {
	heads, err := model.NewMedusa(target, c.w)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.dir, err)
	}
	return &MedusaMethod{heads: heads}, nil
}

// MedusaMethod is Medusa heads on the target's device; they keep no per-sequence state.
type MedusaMethod struct {
	heads *model.Medusa
}

// NewMedusaMethod drafts with heads already on the target's device (Release frees them).
func NewMedusaMethod(heads *model.Medusa) *MedusaMethod { return &MedusaMethod{heads: heads} }

// Name is "medusa".
func (m *MedusaMethod) Name() string { return "medusa" }

// NewDrafter returns a drafter on the shared heads for the target session t.
func (m *MedusaMethod) NewDrafter(t Target) (Drafter, error) {
	sess, ok := t.(*model.Session)
	if !ok {
		return nil, fmt.Errorf("%w: Medusa heads draft for a session of their target model", ErrNeedsTarget)
	}
	return &Medusa{heads: m.heads, sess: sess}, nil
}

// Release frees the heads' device buffers.
func (m *MedusaMethod) Release() { m.heads.Release() }

// Medusa drafts with Medusa heads (FasterDecoding/Medusa): K small heads on the target's last
// hidden state, head k guessing the token k+1 places after the newest one. The heads read the
// row of the target's last step that produced the newest token of ctx (position len(ctx)-2),
// so Propose must follow the target step that produced it, as in Decode. Each head's argmax
// is one draft (q nil: one-hot, lossless with the rejection sampler); the heads' drafts form
// a chain, verified in one target pass (the Medusa paper's tree of top-k candidates is not
// used).
type Medusa struct {
	heads *model.Medusa
	sess  *model.Session
}

// Name is "medusa".
func (m *Medusa) Name() string { return "medusa" }

// Propose returns the first min(k, K) heads' argmax tokens (only those heads run, in one
// submit).
func (m *Medusa) Propose(ctx []int, k int) ([]int, []float32, error) {
	if k <= 0 || len(ctx) < 2 {
		return nil, nil, nil
	}
	ids, err := m.heads.Draft(m.sess, len(ctx)-2, k)
	return ids, nil, err
}

// Accept does nothing: the heads keep no state between steps.
func (m *Medusa) Accept(ctx []int) error { return nil }

// Release does nothing: the heads belong to the method.
func (m *Medusa) Release() {}
