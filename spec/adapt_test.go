package spec

import (
	"math"
	"testing"
	"time"
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
func bestK(r float64, maxK int, fixed, perRow, call, perDraft float64) int {
	best, bestRate := 0, 1/(fixed+perRow)
	tokens, chain := 1.0, 1.0
	for k := 1; k <= maxK; k++ {
		chain *= r
		tokens += chain
		if rate := tokens / (fixed + perRow*float64(k+1) + call + perDraft*float64(k)); rate > bestRate {
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
			got := c.Plan([]PlanSeq{{Acc: acceptanceOf(r), MaxK: 8}}, 1, nil)[0]
			// Rate's prior moves r by at most 1e-6
			if want := bestK(r, 8, d.fixed, d.perRow, d.call, d.perDraft); got != want {
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
	for i, k := range c.Plan(seqs, len(seqs), nil) {
		if k != 0 {
			t.Errorf("steps of 16, sequence %d: k %d, want 0", i, k)
		}
	}
	ks := c.Plan(seqs, len(seqs), func(i int) bool { return i == 3 })
	if ks[3] != 1 || ks[2] != 0 {
		t.Errorf("probe of sequence 3: %v", ks)
	}
	one := []PlanSeq{{Acc: acceptanceOf(0.99), MaxK: 2}, {MaxK: 8}}
	if ks := c.Plan(one, 2, nil); ks[0] != 2 || ks[1] != 0 {
		t.Errorf("one sure drafter bounded by 2 and one without: %v", ks)
	}
}

// A step is not linear in its rows everywhere: where 16 rows have been measured at 30 ms and
// 17 at 40 ms (a second block; seeded as where a jump may be), sixteen sequences with good
// drafts draft nothing, though the line alone (1 ms a row) says a 90% draft pays; with both
// measured on the line, they draft.
func TestPlanSeesMeasuredJumps(t *testing.T) {
	plan := func(at17 time.Duration) []int {
		c := NewCostModel(15*ms, ms)
		for range 8 {
			for rows := 1; rows <= 16; rows++ {
				c.ObserveStep(rows, 14*ms+time.Duration(rows)*ms)
			}
			c.ObserveStep(17, at17)
			c.ObserveStep(32, 46*ms)
		}
		c.SeedSteps(map[int]time.Duration{16: 30 * ms, 17: 31 * ms}) // where to look; the observed times win
		seqs := make([]PlanSeq, 16)
		for i := range seqs {
			seqs[i] = PlanSeq{Acc: acceptanceOf(0.9), MaxK: 4}
		}
		return c.Plan(seqs, 16, nil)
	}
	sum := func(ks []int) (n int) {
		for _, k := range ks {
			n += k
		}
		return n
	}
	if ks := plan(40 * ms); sum(ks) != 0 {
		t.Errorf("with a 10 ms jump past 16 rows: drafts %v", ks)
	}
	if ks := plan(31 * ms); sum(ks) == 0 {
		t.Errorf("with 17 rows on the line: no drafts")
	}
}

// Seeded step times price a full batch's jump before any such step is observed, without
// moving the line.
func TestPlanSeededJump(t *testing.T) {
	c := NewCostModel(15*ms, ms)
	for range 8 {
		for rows := 1; rows <= 16; rows++ {
			c.ObserveStep(rows, 14*ms+time.Duration(rows)*ms)
		}
	}
	seqs := make([]PlanSeq, 16)
	for i := range seqs {
		seqs[i] = PlanSeq{Acc: acceptanceOf(0.9), MaxK: 4}
	}
	before := c.Plan(seqs, 16, nil)
	_, perRow, _, _ := c.Costs()
	c.SeedSteps(map[int]time.Duration{16: 30 * ms, 17: 40 * ms})
	after := c.Plan(seqs, 16, nil)
	if _, p, _, _ := c.Costs(); p != perRow {
		t.Errorf("seeding moved the line: %v -> %v a row", perRow, p)
	}
	if before[0] == 0 || after[0] != 0 {
		t.Errorf("drafts before seeding %v, after %v: want some, then none", before, after)
	}
	// Probes wait too, where a draft would cross the jump; below it they go in.
	always := func(int) bool { return true }
	for i := range seqs {
		seqs[i].Acc = acceptanceOf(0.01)
	}
	if ks := c.Plan(seqs, 16, always); ks[0] != 0 {
		t.Errorf("probes past the jump: %v", ks)
	}
	if ks := c.Plan(seqs[:8], 8, always); ks[0] != 1 || ks[7] != 1 {
		t.Errorf("probes of 8 sequences: %v", ks)
	}
}
