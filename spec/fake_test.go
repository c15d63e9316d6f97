package spec

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/devtest"
	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/weights"
)

// loopDevice is the package's tests' device (devtest.Device).
func loopDevice(t testing.TB) *runtime.Device { return devtest.Device(t) }

// fakeTarget is the pure-Go Target: ref.LlamaState for the forward pass, ref.Sample and
// ref.RejectionSample for the device's sampler, with the device's position keys (row j of a
// step of M tokens at positions L..L+M-1 predicts position L+M-nDraft+j). broken swaps in a
// wrong sampler for the negative tests: "accept-all" (every draft passes) or
// "recover-from-p" (a rejected draft is replaced by a sample of p' rather than of
// max(p' - q', 0)) or "keys-off-by-one" (the sampler keys row j with the position of the
// token fed rather than the one produced, so a recovered token reuses the Gumbel noise of
// the token before it).
type fakeTarget struct {
	st     *ref.LlamaState
	cfg    weights.Config
	broken string
}

func newFakeTarget(w *weights.LlamaWeights) *fakeTarget {
	return &fakeTarget{st: ref.NewLlamaState(w), cfg: w.Cfg}
}

func (f *fakeTarget) Len() int       { return f.st.Len() }
func (f *fakeTarget) Truncate(n int) { f.st.Truncate(min(n, f.st.Len())) }
func (f *fakeTarget) Vocab() int     { return f.cfg.Vocab }
func (f *fakeTarget) MaxSeq() int    { return f.cfg.MaxSeq }

func (f *fakeTarget) Forward(tokens []int, nDraft int, q []float32, s model.Sampling) ([]int, error) {
	V, L := f.cfg.Vocab, f.st.Len()
	switch {
	case len(tokens) == 0 || nDraft < 0 || nDraft > MaxSpeculativeTokens || nDraft >= len(tokens):
		return nil, fmt.Errorf("%w: %d drafts among %d tokens", model.ErrBadInput, nDraft, len(tokens))
	case q != nil && len(q) != nDraft*V:
		return nil, fmt.Errorf("%w: q has %d values", model.ErrBadInput, len(q))
	case L+len(tokens) > f.cfg.MaxSeq:
		return nil, fmt.Errorf("%w: %d tokens", runtime.ErrContextFull, L+len(tokens))
	}
	for _, t := range tokens {
		if t < 0 || t >= V {
			return nil, fmt.Errorf("%w: token %d", model.ErrBadInput, t)
		}
	}
	logits, _ := f.st.Forward(tokens)
	rows := logits[(len(tokens)-nDraft-1)*V:] // [nDraft+1, V]
	p := ref.SamplingParams{Temperature: s.Temperature, TopK: s.TopK, TopP: s.TopP}
	pos0 := uint32(L + len(tokens) - nDraft) // the position rows[0] predicts
	if nDraft == 0 {
		return []int{ref.Sample(rows, p, s.Seed, s.SeqID, pos0)}, nil
	}
	drafts := tokens[len(tokens)-nDraft:]
	switch f.broken {
	case "accept-all":
		return append(slices.Clone(drafts), ref.Sample(rows[nDraft*V:], p, s.Seed, s.SeqID, pos0+uint32(nDraft))), nil
	case "recover-from-p":
		return recoverFromP(rows, drafts, q, p, s.Seed, s.SeqID, pos0), nil
	case "keys-off-by-one":
		out, _ := ref.RejectionSample(rows, drafts, q, p, s.Seed, s.SeqID, pos0-1)
		return out, nil
	}
	out, _ := ref.RejectionSample(rows, drafts, q, p, s.Seed, s.SeqID, pos0)
	return out, nil
}

// recoverFromP is ref.RejectionSample (non-greedy) with the classic bug: the token replacing
// a rejected draft is drawn from p' instead of the residual max(p' - q', 0).
func recoverFromP(rows []float32, drafts []int, q []float32, p ref.SamplingParams, seed uint64, seq, pos0 uint32) []int {
	V := len(rows) / (len(drafts) + 1)
	var out []int
	for j, d := range drafts {
		pos := pos0 + uint32(j)
		target := ref.ProcessedProbs(rows[j*V:(j+1)*V], p)
		qd := 1.0
		if q != nil {
			qd = float64(q[j*V+d])
		}
		u := float64(ref.RandUniform(seed, seq, pos, ref.RejectionDraw))
		if u < min(1, target[d]/qd) {
			out = append(out, d)
			continue
		}
		return append(out, ref.GumbelMax(target, seed, seq, pos))
	}
	return append(out, ref.Sample(rows[len(drafts)*V:], p, seed, seq, pos0+uint32(len(drafts))))
}

// checkedTarget wraps a Target and checks the loop's bookkeeping at every call: the KV holds
// every token but the newest between steps (Len == len(seq)-1), each step starts with the
// newest token, Truncate keeps exactly the last token and the accepted drafts, and (on the
// device) the page pool holds exactly ceil(Len / PageSize) pages.
type checkedTarget struct {
	Target
	t        testing.TB
	pool     *runtime.PagePool // nil for the fake
	seq      []int             // tokens fed and returned so far
	wantKeep int               // the Truncate the current step needs
	steps    int
}

func (c *checkedTarget) Forward(tokens []int, nDraft int, q []float32, s model.Sampling) ([]int, error) {
	c.t.Helper()
	if c.seq == nil {
		if c.Len() != 0 {
			c.t.Errorf("prefill on a target holding %d tokens", c.Len())
		}
		c.seq = slices.Clone(tokens)
	} else {
		if c.Len() != len(c.seq)-1 || tokens[0] != c.seq[len(c.seq)-1] {
			c.t.Errorf("step %d: target holds %d tokens and is fed %v; the sequence has %d ending in %d",
				c.steps, c.Len(), tokens, len(c.seq), c.seq[len(c.seq)-1])
		}
	}
	lenBefore := c.Len()
	out, err := c.Target.Forward(tokens, nDraft, q, s)
	if err != nil {
		return nil, err
	}
	c.steps++
	c.wantKeep = lenBefore + 1 + len(out) - 1
	c.seq = append(c.seq, out...)
	c.checkPages()
	return out, nil
}

func (c *checkedTarget) Truncate(n int) {
	c.t.Helper()
	if n != c.wantKeep {
		c.t.Errorf("step %d: truncate to %d, want %d", c.steps, n, c.wantKeep)
	}
	c.Target.Truncate(n)
	if c.Len() != len(c.seq)-1 {
		c.t.Errorf("step %d: after truncate the target holds %d tokens, the sequence has %d", c.steps, c.Len(), len(c.seq))
	}
	c.checkPages()
}

func (c *checkedTarget) checkPages() {
	c.t.Helper()
	if c.pool == nil {
		return
	}
	if want := (c.Len() + c.pool.PageSize - 1) / c.pool.PageSize; c.pool.InUse() != want {
		c.t.Errorf("step %d: %d pages in use for %d tokens, want %d", c.steps, c.pool.InUse(), c.Len(), want)
	}
}

// stochasticDrafter samples each draft from a fixed distribution Q over the vocabulary (a
// softmax of random logits, unrelated to the target's p) and returns Q as q, to exercise the
// has_q path. Its draws use their own keys (seed, seq 0x5EED, position, token), independent of
// the target's.
type stochasticDrafter struct {
	Q    []float32 // [vocab]
	seed uint64
}

func newStochasticDrafter(vocab int, qSeed int64, scale float64, seed uint64) *stochasticDrafter {
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
	return &stochasticDrafter{Q: q, seed: seed}
}

func (d *stochasticDrafter) Name() string { return "stochastic" }

func (d *stochasticDrafter) Propose(ctx []int, k int) ([]int, []float32, error) {
	w := make([]float64, len(d.Q))
	for i, v := range d.Q {
		w[i] = float64(v)
	}
	var drafts []int
	var q []float32
	for j := range k {
		drafts = append(drafts, ref.GumbelMax(w, d.seed, 0x5EED, uint32(len(ctx)+j)))
		q = append(q, d.Q...)
	}
	return drafts, q, nil
}

func (d *stochasticDrafter) Accept(ctx []int) error { return nil }
func (d *stochasticDrafter) Release()               {}

// openDrafter makes cfg's drafter on target model m the way the engine does (validate, open
// the checkpoint, load it next to m); the drafter proper is made for the session decode
// gives it (bind). The test's cleanup releases the drafter and the method.
func openDrafter(t testing.TB, cfg Config, m *model.Model) (Drafter, error) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var tc *weights.Config
	if m != nil {
		tc = &m.Cfg
	}
	ck, err := Open(cfg, tc)
	if err != nil {
		return nil, err
	}
	meth, err := ck.Load(m)
	if err != nil {
		return nil, err
	}
	b := &boundDrafter{meth: meth}
	t.Cleanup(func() { b.Release(); meth.Release() })
	return b, nil
}

// boundDrafter is a method's drafter, made when decode binds it to its target.
type boundDrafter struct {
	meth Method
	Drafter
}

func (b *boundDrafter) Name() string { return b.meth.Name() }

// bind makes the drafter for target (once; a later bind to another target starts afresh).
func (b *boundDrafter) bind(target Target) error {
	if b.Drafter != nil {
		b.Drafter.Release()
	}
	d, err := b.meth.NewDrafter(target)
	b.Drafter = d
	return err
}

func (b *boundDrafter) Release() {
	if b.Drafter != nil {
		b.Drafter.Release()
		b.Drafter = nil
	}
}
