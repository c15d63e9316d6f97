package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kv"
	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/spec"
)

// warm runs one step of each verify height a step of a token and its drafts can use that
// calibration does not time (their programs are recorded at first use, and a driver compiles
// a kernel at its first dispatch), so that no request pays for them: the first draft a fresh
// process verified took 100 ms on lavapipe, a sixth of a 64-token generation. (An engine
// without speculation warms nothing: its prompts' steps would cost a large model seconds at
// load on a CPU adapter.)
func (e *Engine) warm() error {
	sess := e.target.NewSession()
	defer sess.Release()
	for _, rows := range model.VerifyRows() {
		if rows > e.target.Opts.MaxDraft+1 || slices.Contains(spec.CalibrationRows, rows) {
			continue
		}
		toks := make([]int, rows)
		for i := range toks {
			toks[i] = i % e.cfg.Vocab
		}
		if _, err := sess.Forward(toks, rows-1, nil, Sampling{}); err != nil {
			return fmt.Errorf("engine: a warm-up step of %d rows (dummy tokens) failed, so will every request: %w", rows, err)
		}
		sess.Truncate(0)
	}
	return nil
}

// warmDrafter runs the drafter once on a scratch sequence, as a generation would: a prompt
// of more rows than one catch-up block, drafts of every depth, then a step and drafts again
// (a short catch-up). A neural drafter's kernels compile at their first dispatch: unwarmed,
// the first draft of a fresh process took 25 ms on lavapipe where later ones take 2-3, and the
// planner, charging that to drafting, then drafted in 4 of 178 steps.
func (e *Engine) warmDrafter() error {
	d, err := e.method.NewDrafter()
	if err != nil {
		return err
	}
	defer d.Release()
	sess := e.target.NewSession()
	defer sess.Release()
	sess.Keep = d.Keep()
	ctx := make([]int, 12)
	for i := range ctx {
		ctx[i] = (i + 1) % e.cfg.Vocab
	}
	fail := func(err error) error {
		return fmt.Errorf("engine: warming the %s drafter on a scratch sequence failed, so will every request: %w", e.method.Name(), err)
	}
	feed := ctx
	for range 2 {
		out, err := sess.Forward(feed, 0, nil, Sampling{})
		if err != nil {
			return fail(err)
		}
		ctx = append(ctx, out...)
		feed = out
		if err := d.Accept(ctx); err != nil {
			return fail(err)
		}
		p := []spec.Proposal{{Drafter: d, Ctx: ctx, K: e.target.Opts.MaxDraft}}
		if err := e.method.Propose(p); err != nil {
			return fail(err)
		}
	}
	return nil
}

// calibrate times steps of 1, 2, 3, 5 and 9 rows (one token and its drafts) on a scratch sequence:
// the cost model adaptive speculation starts from; then a full batch (MaxSeqs sequences of
// one token) and the same with one draft more, whose difference the planner charges a draft
// that takes a full batch past it (seedBatch).
func (e *Engine) calibrate() (*spec.CostModel, error) {
	sess := e.target.NewSession()
	defer sess.Release()
	c, err := spec.Calibrate(func(rows int) (time.Duration, error) {
		toks := make([]int, min(rows, e.target.Opts.MaxDraft+1))
		for i := range toks {
			toks[i] = i % e.cfg.Vocab
		}
		t0 := time.Now()
		_, err := sess.Forward(toks, len(toks)-1, nil, Sampling{})
		sess.Truncate(0)
		return time.Since(t0), err
	}, 3)
	if err != nil {
		return nil, err
	}
	c.SetBlocking(e.target.Limits().Blocks)
	return c, e.seedBatch(c)
}

// seedBatch times a step of MaxSeqs scratch sequences of one token each, and of the same with
// a draft after the first (the fastest of 3 each, as Calibrate keeps), and seeds the cost
// model with them.
func (e *Engine) seedBatch(c *spec.CostModel) error {
	lim := e.target.Limits()
	n := lim.MaxSeqs
	if n < 2 || lim.MaxLogitRows < n+1 || lim.StepRows < n+1 || e.target.Pool().Free() < n+1 {
		return nil
	}
	seqs := make([]*kv.Sequence, n)
	for i := range seqs {
		seqs[i] = e.target.Pool().NewSequence()
		defer seqs[i].Release()
	}
	times := map[int]time.Duration{}
	for _, extra := range []int{0, 1} {
		var ts []time.Duration
		for range 3 {
			steps := make([]batch.SeqStep, n)
			for i, s := range seqs {
				steps[i] = batch.SeqStep{Seq: s, Tokens: []int{i % e.cfg.Vocab}, Sample: true}
			}
			if extra == 1 {
				steps[0].Tokens, steps[0].NDraft = []int{0, 1}, 1
			}
			t0 := time.Now()
			_, err := e.target.Step(steps)
			ts = append(ts, time.Since(t0))
			for _, s := range seqs {
				s.Truncate(0)
			}
			if err != nil {
				return fmt.Errorf("engine: timing a batch of %d sequences: %w", n, err)
			}
		}
		slices.Sort(ts)
		times[n+extra] = ts[0] // the fastest: a busy machine only slows a step
	}
	c.SeedSteps(times)
	return nil
}
