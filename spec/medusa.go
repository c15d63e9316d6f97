package spec

import (
	"fmt"

	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/weights"
)

func init() {
	Register("medusa", func(cfg Config, env Env) (Drafter, error) {
		dir := env.ModelDir
		if dir == "" {
			dir = cfg.Model
		}
		if env.Target == nil {
			return nil, fmt.Errorf("medusa heads read the target model's hidden state: no target model given")
		}
		w, err := weights.LoadMedusa(dir)
		if err != nil {
			return nil, err
		}
		heads, err := model.NewMedusa(env.Target, w)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		return NewMedusa(heads), nil
	})
}

// Medusa drafts with Medusa heads (FasterDecoding/Medusa): K small heads on the target's last
// hidden state, head k guessing the token k+1 places after the newest one. The heads read the
// row of the target's last step that produced the newest token of ctx (position len(ctx)-2),
// so Propose must follow the target step that produced it, as in Decode. Each head's argmax
// is one draft (q nil: one-hot, lossless with the rejection sampler); the heads' drafts form
// a chain, verified in one target pass (the Medusa paper's tree of top-k candidates is not
// used).
type Medusa struct {
	heads *model.Medusa
}

// NewMedusa makes a drafter of heads already on the target's device.
func NewMedusa(heads *model.Medusa) *Medusa { return &Medusa{heads: heads} }

// Name is "medusa".
func (m *Medusa) Name() string { return "medusa" }

// Propose returns the first min(k, K) heads' argmax tokens (all K heads run in one submit).
func (m *Medusa) Propose(ctx []int, k int) ([]int, []float32, error) {
	if k <= 0 || len(ctx) < 2 {
		return nil, nil, nil
	}
	ids, err := m.heads.Draft(len(ctx) - 2)
	if err != nil {
		return nil, nil, err
	}
	return ids[:min(k, len(ids))], nil, nil
}

// Accept does nothing: the heads keep no state between steps.
func (m *Medusa) Accept(ctx []int) error { return nil }

// Release frees the heads' device buffers.
func (m *Medusa) Release() { m.heads.Release() }
