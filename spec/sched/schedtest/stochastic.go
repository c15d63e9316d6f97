// Package schedtest is what the exactness tests of speculative decoding share (spec/sched's
// on the reference model, spec/neural's on the device): a drafter that samples its drafts and
// returns their distribution, the exact joint distribution of a reference model's first
// tokens, and the statistical checks that a sampler draws from it. Only tests import it.
package schedtest

import (
	"math"
	"math/rand"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/spec"
)

// Stochastic is a method whose drafter samples each draft from a fixed distribution Q over
// the vocabulary (a softmax of random logits, unrelated to the target's p) and returns Q as
// the draft's q. Its draws use the target's keys (the proposal's seed and choice, the
// position, the token), as the device's sampling drafters do, so they are coupled to the
// target's draws.
type Stochastic struct {
	Q []float32 // [vocab]
}

// NewStochastic makes Q from random logits of the given scale (qSeed picks them).
func NewStochastic(vocab int, qSeed int64, scale float64) *Stochastic {
	rng := rand.New(rand.NewSource(qSeed))
	var sum float64
	w := make([]float64, vocab)
	for i := range w {
		w[i] = math.Exp(scale * rng.NormFloat64())
		sum += w[i]
	}
	q := make([]float32, vocab)
	for i := range q {
		q[i] = float32(w[i] / sum)
	}
	return &Stochastic{Q: q}
}

func (d *Stochastic) Name() string                      { return "stochastic" }
func (d *Stochastic) NewDrafter() (spec.Drafter, error) { return d, nil }
func (d *Stochastic) Release()                          {}
func (d *Stochastic) Keep() batch.Slot                  { return 0 }
func (d *Stochastic) Accept([]int) error                { return nil }

// Propose samples K drafts from Q for each proposal and returns Q for each.
func (d *Stochastic) Propose(ps []spec.Proposal) error {
	w := make([]float64, len(d.Q))
	for i, v := range d.Q {
		w[i] = float64(v)
	}
	for i, p := range ps {
		ps[i].Drafts, ps[i].Q = nil, nil
		for j := range p.K {
			ps[i].Drafts = append(ps[i].Drafts, kernelref.GumbelMax(w, p.Sampling.Seed, p.Sampling.Choice, uint32(len(p.Ctx)+j)))
			ps[i].Q = append(ps[i].Q, d.Q...)
		}
	}
	return nil
}
