package spec

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// simulateSteps runs one sequence's plans for steps steps on a device whose step of n rows
// takes slow x (220 ms + 80 ms a computed row) and whose drafter costs 5 ms + 10 ms a token,
// with drafts each accepted at rate accept (from rng), and probes after 16 steps without
// drafts. It returns the draft lengths planned.
func simulateSteps(c *CostModel, acc *Acceptance, rng *rand.Rand, accept, slow float64, steps int) []int {
	var ks []int
	idle := 0
	for range steps {
		k := c.Plan([]PlanSeq{{Acc: acc, MaxK: 8}}, 1, 0, func(int) bool { return idle >= 16 })[0]
		if idle++; k > 0 {
			idle = 0
		}
		n := 0
		for n < k && rng.Float64() < accept {
			n++
		}
		acc.Record(k, n)
		_, comp := lavapipeBlocks(1 + k)
		c.ObserveStep(1+k, time.Duration(slow*float64(time.Duration(220+80*comp)*ms)))
		if k > 0 {
			c.ObserveDraft(k, time.Duration(slow*float64(5*ms+time.Duration(k)*10*ms)))
		}
		ks = append(ks, k)
	}
	return ks
}

// A machine that is busy for a while makes every step slower, drafting or not: not a reason
// to stop drafting for the rest of the engine's life. On the inflated model's costs (a row
// 300 ms, each more 80 ms): a calibration whose steps of more than one row ran while the
// machine was busy (two or three times the time) stopped every draft for good, since the plan
// never stepped so many rows again to see them cheap; a drafter right 90% of the time then drafted
// nothing for a hundred steps. Now those times fade, and within 40 steps the plan drafts as
// it does after a quiet calibration. Eight busy steps in the middle of a request do not stop
// its drafts either.
func TestBusyMachineDoesNotStopDrafting(t *testing.T) {
	calibrated := func(busy float64) *CostModel {
		c, err := Calibrate(func(rows int) (time.Duration, error) {
			d := time.Duration(220+80*rows) * ms
			if rows > 1 {
				d = time.Duration(busy * float64(d))
			}
			return d, nil
		}, 3)
		if err != nil {
			t.Fatal(err)
		}
		c.SetBlocking(lavapipeBlocks)
		return c
	}
	for _, busy := range []float64{1, 2, 3} {
		var acc Acceptance
		acc.Seed(acceptanceOf(0.9), 8)
		ks := simulateSteps(calibrated(busy), &acc, rand.New(rand.NewPCG(1, 2)), 0.9, 1, 60)
		if k := ks[len(ks)-1]; k < 4 {
			t.Errorf("calibrated at %gx for more than one row: after 60 steps the plan drafts %d, want 4 or more: %v", busy, k, ks)
		}
	}

	c, rng := calibrated(1), rand.New(rand.NewPCG(3, 4))
	var acc Acceptance
	sum := func(ks []int) (s int) {
		for _, k := range ks {
			s += k
		}
		return s
	}
	before := simulateSteps(c, &acc, rng, 0.7, 1, 40)
	busy := simulateSteps(c, &acc, rng, 0.7, 3, 8)
	after := simulateSteps(c, &acc, rng, 0.7, 1, 20)
	b, a := sum(before[30:]), sum(after[10:])
	if b < 10 || a < b*8/10 {
		t.Errorf("drafts in 10 steps: %d before eight busy steps, %d ten steps after them\nbefore %v\nbusy %v\nafter %v", b, a, before, busy, after)
	}
}

// A step of one block is priced by what steps of its height took lately, not by the line
// fitted over every row count: on the inflated model calibrated at 1, 5 and 9 rows the line
// priced a second row at about 90 ms where steps of two rows took 60 ms more than steps of
// one, and EAGLE's drafts (41% accepted) were left out where one a step paid.
func TestPlanPricesHeightsMeasured(t *testing.T) {
	c := NewCostModel(210*ms, 90*ms)
	c.SetBlocking(lavapipeBlocks)
	for range 4 {
		for rows, d := range map[int]time.Duration{1: 210 * ms, 2: 270 * ms, 5: 570 * ms, 9: 930 * ms} {
			c.ObserveStep(rows, d)
		}
	}
	c.ObserveDraft(1, 7*ms)
	if k := c.Plan([]PlanSeq{{Acc: acceptanceOf(0.41), MaxK: 8}}, 1, 0, nil)[0]; k != 1 {
		t.Errorf("a drafter right 41%% of the time where a second row costs 60 ms of 210: %d drafts, want 1", k)
	}
	if k := c.Plan([]PlanSeq{{Acc: acceptanceOf(0.2), MaxK: 8}}, 1, 0, nil)[0]; k != 0 {
		t.Errorf("a drafter right 20%% of the time: %d drafts, want 0", k)
	}
	// a height measured cheaper than a lower one is priced as the lower one: no free rows
	c.ObserveStep(3, 200*ms)
	if hp := c.heightPrices(); hp.price(3, 0, 0) < hp.price(2, 0, 0) {
		t.Errorf("3 rows priced %v below 2 rows' %v", hp.price(3, 0, 0), hp.price(2, 0, 0))
	}
}

// A rate learnt from a draft or two is a guess: a fresh sequence whose first draft was
// rejected (on a device where a draft pays above 44%) keeps drafting, and stops once many
// rejections say the drafter is poor.
func TestPlanHopesOnFewDrafts(t *testing.T) {
	c := NewCostModel(220*ms, 90*ms)
	c.ObserveDraft(1, 7*ms)
	var acc Acceptance
	acc.Record(1, 0)
	if r := acc.Chain(0); r > 0.34 {
		t.Fatalf("after one rejection the rate is %.2f", r)
	}
	if k := c.Plan([]PlanSeq{{Acc: &acc, MaxK: 8}}, 1, 0, nil)[0]; k == 0 {
		t.Errorf("one rejected draft stopped drafting")
	}
	for range 30 {
		acc.Record(1, 0)
	}
	if k := c.Plan([]PlanSeq{{Acc: &acc, MaxK: 8}}, 1, 0, nil)[0]; k != 0 {
		t.Errorf("after 31 rejections: %d drafts", k)
	}
}

// Rows above the heights stepped lately are never nearly free: a prompt's prefill in the line
// (16 rows computed at 700 ms, where a decode row adds 90 ms) cuts its slope to about 30 ms,
// and a plan that steps two and three rows priced five at little more than three, so an
// EAGLE-3-like drafter (its third and fourth drafts looking as likely as the second before
// they are tried) drafted four now and then.
func TestPlanNoFreeRowsAboveHeights(t *testing.T) {
	c := NewCostModel(230*ms, 90*ms)
	c.SetBlocking(lavapipeBlocks)
	for range 20 {
		c.ObserveStep(3, 410*ms)
		c.ObserveStep(2, 320*ms)
	}
	c.ObserveStep(1, 230*ms)
	c.ObserveStep(10, 700*ms) // the next prompt's prefill
	c.ObserveDraft(2, 8*ms)
	c.ObserveDraft(1, 5*ms)
	if _, perRow, _, _ := c.Costs(); perRow > 60*ms {
		t.Fatalf("the line's slope is %v: the prefill did not cut it as on the device", perRow)
	}
	var acc Acceptance
	for i := range 100 {
		acc.Record(2, []int{0, 1, 1, 2, 2, 2, 2, 0, 0, 1}[i%10]) // 70%, then 57%
	}
	if k := c.Plan([]PlanSeq{{Acc: &acc, MaxK: 4}}, 1, 0, nil)[0]; k < 1 || k > 2 {
		t.Errorf("rates %.2f %.2f %.2f: %d drafts, want 1 or 2 (a row costs 90 ms)", acc.Rate(0), acc.Rate(1), acc.Rate(2), k)
	}
}

// A rate that rests on many drafts is no guess: right 27% of the time over the last 50 drafts,
// where a draft pays from 32% (a step of one row 300 ms, of two 380 ms, the draft 15 ms), a
// sequence drafts nothing. Raised by a full standard error (0.06) it drafted every step, as
// n-gram did on the inflated model (right 30%, paying from 34%: 0.95x as at k 1). One
// rejected draft of a fresh sequence is still a guess, raised in full.
func TestPlanLeavesBreakEvenDrafter(t *testing.T) {
	c := NewCostModel(300*ms, 80*ms)
	c.SetBlocking(lavapipeBlocks)
	for range 10 {
		c.ObserveStep(1, 300*ms)
		c.ObserveStep(2, 380*ms)
	}
	c.ObserveDraft(1, 15*ms)
	var acc Acceptance
	acc.proposed[0], acc.accepted[0] = 50, 13.5
	if k := c.Plan([]PlanSeq{{Acc: &acc, MaxK: 4}}, 1, 0, nil)[0]; k != 0 {
		t.Errorf("rate %.3f over 50 drafts, planned as %.3f: %d drafts, want none", acc.Rate(0), acc.Hopeful(0), k)
	}
	var fresh Acceptance
	fresh.Record(1, 0)
	r, n := fresh.Rate(0), 1.0+acceptancePrior
	if h, want := fresh.Hopeful(0), r+math.Sqrt(r*(1-r)/n); math.Abs(h-want) > 1e-12 {
		t.Errorf("one rejected draft: rate %.3f planned as %.3f, want %.3f (a full standard error)", r, h, want)
	}
}

// Calibration observes its row counts in CalibrationRows' order, so that each count's weight
// (each observation fades the others') is the same on every run: observed in a map's order,
// the weight of a busy five-row time left after 35 steps differed from run to run, and so did
// whether the plan drafted two or four.
func TestCalibrateIsRepeatable(t *testing.T) {
	c, err := Calibrate(func(rows int) (time.Duration, error) { return time.Duration(220+80*rows) * ms, nil }, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, rows := range CalibrationRows {
		want := math.Pow(emaDecay, float64(len(CalibrationRows)-1-i))
		if w := c.byRows[rows].weight; math.Abs(w-want) > 1e-12 {
			t.Errorf("%d rows weigh %.4f after calibration, want %.4f", rows, w, want)
		}
	}
}

// One slow step neither prices a height stepped often nor stands between two of them: on the
// inflated model a two-row step took 428 ms where they took about 360, the plan's next steps
// had three rows (priced no cheaper than 428), and with two drafts as cheap as one the 2-layer
// draft model (its second draft right 21-30%) drafted two every step until the slow time faded.
func TestPlanOneSlowStepFreesNoRow(t *testing.T) {
	c := NewCostModel(280*ms, 80*ms)
	c.SetBlocking(lavapipeBlocks)
	for range 20 {
		c.ObserveStep(1, 300*ms)
	}
	c.ObserveStep(2, 428*ms)
	for range 8 {
		c.ObserveStep(3, 440*ms)
	}
	c.ObserveDraft(2, 12*ms)
	c.ObserveDraft(1, 6*ms)
	hp := c.heightPrices()
	if p2, p3 := hp.price(2, 0, 0), hp.price(3, 0, 0); p3 < 0.439 || p3-p2 < 0.05 {
		t.Errorf("three rows priced %.0f ms (stepped at 440), two %.0f ms: the third row is nearly free", p3*1000, p2*1000)
	}
	var acc Acceptance
	acc.proposed[0], acc.accepted[0] = 30, 15
	acc.proposed[1], acc.accepted[1] = 8, 2.4
	if k := c.Plan([]PlanSeq{{Acc: &acc, MaxK: 4}}, 1, 0, nil)[0]; k != 1 {
		t.Errorf("rates %.2f, %.2f with a row at 70 ms of 300: %d drafts, want 1", acc.Rate(0), acc.Rate(1), k)
	}
}
