package spec

import (
	"math"
	"testing"
	"time"

	"github.com/wspec/wspec/runtime/batch"
)

const ms = time.Millisecond

// acceptanceOf is an Acceptance that has seen each position accept at rate r, many times.
func acceptanceOf(r float64) *Acceptance {
	var a Acceptance
	for j := range a.proposed {
		a.proposed[j], a.accepted[j] = 1e6, r*1e6
	}
	return &a
}

// The cost model fits its lines to what it observes: steps by rows, drafter calls by tokens.
func TestCostModelFits(t *testing.T) {
	c := NewCostModel(10*ms, ms)
	for range 3 {
		for _, rows := range []int{1, 5, 9} {
			c.ObserveStep(rows, time.Duration(9+2*rows)*ms)
		}
		for _, n := range []int{1, 2, 4} {
			c.ObserveDraft(n, time.Duration(5000+2800*n)*time.Microsecond)
		}
	}
	fixed, perRow, call, perDraft := c.Costs()
	near := func(name string, got, want time.Duration) {
		if math.Abs(float64(got-want)) > float64(10*time.Microsecond) {
			t.Errorf("%s %v, want %v", name, got, want)
		}
	}
	near("fixed", fixed, 9*ms)
	near("per row", perRow, 2*ms)
	near("draft call", call, 5*ms)
	near("per draft", perDraft, 2800*time.Microsecond)

	// one draft length seen: the call's time goes to the slope (no call cost is invented)
	c = NewCostModel(10*ms, ms)
	c.ObserveDraft(3, 9*ms)
	_, _, call, per := c.Costs()
	if call != 0 {
		t.Errorf("one length: a call cost of %v was invented", call)
	}
	near("one length: per draft", per, 3*ms)
}

// bestK is the draft length that maximises one sequence's expected tokens per second,
// trying every k: what Plan should find.
// computed (nil: every row) is the rows a step of n rows computes.
func bestK(r float64, maxK int, fixed, perRow, call, perDraft float64, computed func(n int) int) int {
	if computed == nil {
		computed = func(n int) int { return n }
	}
	best, bestRate := 0, 1/(fixed+perRow)
	tokens, chain := 1.0, 1.0
	for k := 1; k <= maxK; k++ {
		chain *= r
		tokens += chain
		if rate := tokens / (fixed + perRow*float64(computed(k+1)) + call + perDraft*float64(k)); rate > bestRate {
			best, bestRate = k, rate
		}
	}
	return best
}

// For one sequence, the plan is the best draft length, on a CPU-like device (a row costs a
// fifth of a step, a call of the drafter half a step) and a GPU-like one (rows nearly free).
func TestPlanOneSequence(t *testing.T) {
	devices := []struct {
		name                          string
		fixed, perRow, call, perDraft float64 // ms
	}{
		{"cpu", 8, 2, 5, 2.8},
		{"gpu", 4, 0.05, 0.4, 0.3},
		{"free drafts", 8, 2, 0, 0.01},
	}
	for _, d := range devices {
		c := NewCostModel(time.Duration((d.fixed+d.perRow)*1e6), time.Duration(d.perRow*1e6))
		for _, n := range []int{1, 2} {
			c.ObserveDraft(n, time.Duration((d.call+d.perDraft*float64(n))*1e6))
		}
		for _, r := range []float64{0.1, 0.4, 0.6, 0.75, 0.9, 0.98} {
			got := c.Plan([]PlanSeq{{Acc: acceptanceOf(r), MaxK: 8}}, 1, 0, nil)[0]
			// Rate's prior moves r by at most 1e-6
			if want := bestK(r, 8, d.fixed, d.perRow, d.call, d.perDraft, nil); got != want {
				t.Errorf("%s, acceptance %.2f: k %d, the best is %d", d.name, r, got, want)
			}
		}
	}
}

// In a large batch on a CPU-like device every row is dear against the step's rate, so
// speculation switches off; a probe still drafts one token; no drafter, no drafts; MaxK bounds.
func TestPlanBatch(t *testing.T) {
	c := NewCostModel(10*ms, 2*ms)
	c.ObserveDraft(1, 3*ms)
	c.ObserveDraft(2, 5*ms)
	seqs := make([]PlanSeq, 16)
	for i := range seqs {
		seqs[i] = PlanSeq{Acc: acceptanceOf(0.7), MaxK: 4}
	}
	for i, k := range c.Plan(seqs, len(seqs), 0, nil) {
		if k != 0 {
			t.Errorf("steps of 16, sequence %d: k %d, want 0", i, k)
		}
	}
	ks := c.Plan(seqs, len(seqs), 0, func(i int) bool { return i == 3 })
	if ks[3] != 1 || ks[2] != 0 {
		t.Errorf("probe of sequence 3: %v", ks)
	}
	one := []PlanSeq{{Acc: acceptanceOf(0.99), MaxK: 2}, {MaxK: 8}}
	if ks := c.Plan(one, 2, 0, nil); ks[0] != 2 || ks[1] != 0 {
		t.Errorf("one sure drafter bounded by 2 and one without: %v", ks)
	}
}

// lavapipeBlocks is how the model's steps run: up to 16 rows as one block of the smallest
// verify height that holds them, more in blocks of 8.
var lavapipeBlocks = batch.Limits{BlockRows: []int{1, 2, 3, 5, 9, 16}, ChunkRows: 8}.Blocks

// A block costs what was measured past the line: where 17 rows (three blocks of 8) took 10 ms
// a block more than the line says, sixteen sequences with good drafts draft nothing on a
// device whose rows are cheap; measured on the line, they draft. Seeded times price a block
// before any such step is observed, observed ones replace them, and neither moves the line.
func TestPlanPricesBlocks(t *testing.T) {
	const us = time.Microsecond
	plan := func(seed17, at17 time.Duration) (*CostModel, []int) {
		c := NewCostModel(14*ms+100*us, 100*us)
		c.SetBlocking(lavapipeBlocks)
		for range 8 {
			for _, rows := range []int{1, 2, 3, 5, 9, 16} {
				c.ObserveStep(rows, 14*ms+time.Duration(rows)*100*us)
			}
			if at17 > 0 {
				c.ObserveStep(17, at17)
			}
		}
		if seed17 > 0 {
			c.SeedSteps(map[int]time.Duration{16: 15*ms + 600*us, 17: seed17})
		}
		seqs := make([]PlanSeq, 16)
		for i := range seqs {
			seqs[i] = PlanSeq{Acc: acceptanceOf(0.9), MaxK: 4}
		}
		return c, c.Plan(seqs, 16, 0, nil)
	}
	sum := func(ks []int) (n int) {
		for _, k := range ks {
			n += k
		}
		return n
	}
	line17 := 14*ms + 2400*us // 24 rows computed
	if _, ks := plan(line17+20*ms, 0); sum(ks) != 0 {
		t.Errorf("seeded: 10 ms a block past 16 rows: drafts %v", ks)
	}
	c, ks := plan(line17, 0)
	if sum(ks) == 0 {
		t.Errorf("seeded: 17 rows on the line: no drafts")
	}
	if fixed, perRow, _, _ := c.Costs(); (fixed-14*ms).Abs() > us || (perRow-100*us).Abs() > us {
		t.Errorf("line %v + %v a row, want 14ms + 100us", fixed, perRow)
	}
	if _, ks := plan(line17, line17+20*ms); sum(ks) != 0 {
		t.Errorf("observed: 10 ms a block (seeded on the line): drafts %v", ks)
	}
	if _, ks := plan(line17+20*ms, line17); sum(ks) == 0 {
		t.Errorf("observed on the line (seeded dear): no drafts")
	}
}

// Rows that fill a block's padding cost nothing: for one sequence whose step of 1 + k rows
// runs as a block of 1, 2, 3, 5 or 9, the plan is the best k priced by the rows computed,
// which here differs from the best k priced by the rows alone.
func TestPlanFillsPadding(t *testing.T) {
	c := NewCostModel(10*ms, 2*ms)
	c.ObserveDraft(1, 10*time.Microsecond)
	c.ObserveDraft(2, 20*time.Microsecond)
	c.SetBlocking(lavapipeBlocks)
	computed := func(n int) int { _, comp := lavapipeBlocks(n); return comp }
	for _, r := range []float64{0.7, 0.75, 0.85, 0.9} {
		got := c.Plan([]PlanSeq{{Acc: acceptanceOf(r), MaxK: 8}}, 1, 0, nil)[0]
		want := bestK(r, 8, 8, 2, 0, 0.01, computed)
		if lineOnly := bestK(r, 8, 8, 2, 0, 0.01, nil); got != want || want == lineOnly {
			t.Errorf("acceptance %.2f: k %d, the best by rows computed is %d (by rows %d)", r, got, want, lineOnly)
		}
	}
}

// Probes wait where a draft would open a block; below it they go in.
func TestProbesWaitAtBlocks(t *testing.T) {
	c := NewCostModel(15*ms, ms)
	c.SetBlocking(lavapipeBlocks)
	seqs := make([]PlanSeq, 16)
	for i := range seqs {
		seqs[i] = PlanSeq{Acc: acceptanceOf(0.01), MaxK: 4}
	}
	always := func(int) bool { return true }
	if ks := c.Plan(seqs, 16, 0, always); ks[0] != 0 {
		t.Errorf("probes past 16 rows: %v", ks)
	}
	if ks := c.Plan(seqs[:8], 8, 0, always); ks[0] != 1 || ks[7] != 1 {
		t.Errorf("probes of 8 sequences: %v", ks)
	}
}

// A step that prefills prompts too runs in blocks of 8 already: drafts and probes are priced
// by the whole step's blocks. Beside 40 prompt rows, 8 decoding sequences fill 6 blocks
// exactly, so a probe would open a seventh and waits; beside 44, their 52 rows leave 4 rows
// of padding, which the probes fill (the first four sequences').
func TestPlanCountsPromptRows(t *testing.T) {
	c := NewCostModel(15*ms, ms)
	c.SetBlocking(lavapipeBlocks)
	c.SeedSteps(map[int]time.Duration{17: 14*ms + 24*ms + 2*20*ms}) // 20 ms a block
	c.ObserveDraft(1, 200*time.Microsecond)
	c.ObserveDraft(2, 400*time.Microsecond)
	seqs := make([]PlanSeq, 8)
	for i := range seqs {
		seqs[i] = PlanSeq{Acc: acceptanceOf(0.01), MaxK: 4}
	}
	always := func(int) bool { return true }
	if ks := c.Plan(seqs, 8, 40, always); ks[0] != 0 || ks[7] != 0 {
		t.Errorf("8 decoding beside 40 prompt rows: probes %v, want none", ks)
	}
	if ks := c.Plan(seqs, 8, 44, always); ks[3] != 1 || ks[4] != 0 {
		t.Errorf("8 decoding beside 44 prompt rows: probes %v, want the first 4", ks)
	}
	for i := range seqs {
		seqs[i].Acc = acceptanceOf(0.9)
	}
	if ks := c.Plan(seqs, 8, 40, nil); ks[0] != 0 {
		t.Errorf("8 good drafters beside 40 prompt rows, 20 ms a block: drafts %v, want none", ks)
	}
	if ks := c.Plan(seqs, 8, 0, nil); ks[0] == 0 {
		t.Errorf("8 good drafters alone (8 rows of padding to 16): no drafts")
	}
}

// A drafter that is always right, on a memory-bound target (the inflated 1.1B model on
// lavapipe: a step of one row 300 ms, each row more 80 ms, blocks of 2, 3, 5, 9 and 16 rows;
// a draft model's 10 ms a token): starting from nothing learnt, the plan grows to the most
// drafts allowed within a few steps, and the acceptance stays learnt for the positions it
// reached. Untried positions take the tried ones' rate (with a flat prior of one half they
// looked unlikely, were never tried, and the plan stayed at 2-3 drafts).
func TestPlanLearnsALongRun(t *testing.T) {
	c := NewCostModel(300*ms, 80*ms)
	c.SetBlocking(lavapipeBlocks)
	c.ObserveDraft(1, 15*ms)
	c.ObserveDraft(4, 45*ms)
	var acc Acceptance
	k := 0
	for step := range 30 {
		k = c.Plan([]PlanSeq{{Acc: &acc, MaxK: 8}}, 1, 0, func(int) bool { return true })[0]
		acc.Record(k, k) // every draft accepted
		if step == 29 && k != 8 {
			t.Errorf("after %d steps the plan drafts %d, want 8", step+1, k)
		}
	}
	if r := acc.Rate(7); r < 0.9 {
		t.Errorf("position 8's rate %.2f after every draft was accepted", r)
	}
	// A drafter that is never right stops drafting but for probes.
	var bad Acceptance
	for range 30 {
		k = c.Plan([]PlanSeq{{Acc: &bad, MaxK: 8}}, 1, 0, nil)[0]
		bad.Record(max(k, 1), 0)
	}
	if k != 0 {
		t.Errorf("a drafter never right: %d drafts", k)
	}
}

// A new sequence seeded with what the engine's earlier sequences learnt plans long runs from
// its first step, and its own record soon outweighs the seed.
func TestAcceptanceSeed(t *testing.T) {
	c := NewCostModel(300*ms, 80*ms)
	c.SetBlocking(lavapipeBlocks)
	var engine, fresh, seeded Acceptance
	for range 40 {
		engine.Record(8, 8)
	}
	seeded.Seed(&engine, 8)
	plan := func(a *Acceptance) int { return c.Plan([]PlanSeq{{Acc: a, MaxK: 8}}, 1, 0, nil)[0] }
	if k, k0 := plan(&seeded), plan(&fresh); k != 8 || k0 >= 8 {
		t.Errorf("first step: seeded %d drafts, fresh %d", k, k0)
	}
	if seeded.proposed[0] > 8.001 || seeded.Rate(3) < 0.85 {
		t.Errorf("the seed is worth %.1f drafts, rate %.2f", seeded.proposed[0], seeded.Rate(3))
	}
	for range 30 {
		seeded.Record(1, 0) // this sequence's first drafts are never right
	}
	if k := plan(&seeded); k != 0 {
		t.Errorf("after 30 rejections: %d drafts", k)
	}
	// A deep position drafted less often keeps its own evidence, up to the weight: Medusa's
	// first head right 40% of 50 drafts, its second never in 6; scaled with the first, the 6
	// would be worth under two drafts against the prior's two of the first head's rate (lately
	// 58%), and a second draft would look 27% likely; kept apart, 16%.
	var medusa Acceptance
	for i := range 50 {
		medusa.Record(1, min(1, i%5/3))
	}
	for range 6 {
		medusa.Record(2, 1)
	}
	seeded.Seed(&medusa, 8)
	if r := seeded.Rate(1); r > 0.2 {
		t.Errorf("seeded from a second position never right in 6 drafts: rate %.2f", r)
	}
	fresh.Seed(&Acceptance{}, 8) // an engine that has learnt nothing gives nothing
	if fresh != (Acceptance{}) {
		t.Errorf("seeded from nothing: %+v", fresh)
	}
}
