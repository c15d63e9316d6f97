package sched

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/spec"
)

// The planner's simulation: every rule of adaptive speculation (spec.CostModel's plan and
// fits, spec.Acceptance's estimates, this package's probes and seeding) prices plans for
// requests on a simulated device, and the throughput it reaches is compared with every fixed
// draft length's on the same device and drafts.
//
// The device runs a step of n rows as one block of the smallest verify height that holds them
// (as lavapipe's steps run) and takes 1 + perRow x (height - 1) decode steps; the drafter takes
// simDraftCall + simPerDraft x k. Each draft is accepted with chance accept once those before
// it were. What the planner sees is noisy: every time it observes is off by a lognormal factor
// (sigma simNoise), and a busy spell every so often (calibration included) makes simBusySteps
// steps simBusy times as slow; the throughput counts the true times.

const (
	simTokens    = 128  // tokens a request generates
	simRequests  = 4    // requests run one after another on an engine (its acceptance seeds the next)
	simSeeds     = 10   // engines per cell, each with its own draws: the expectation is over them
	simMaxK      = 8    // the most drafts a step may carry
	simDraftCall = 0.01 // a drafter's call, in decode steps
	simPerDraft  = 0.01 // and each token it drafts
	simNoise     = 0.10 // sigma of the lognormal error on every time the planner observes
	simBusy      = 2.5  // a busy spell's steps are this many times as slow
	simBusySteps = 8    // for this many steps
	simBusyEvery = 60   // steps between busy spells, on average
)

var simBlocks = batch.Limits{BlockRows: []int{1, 2, 3, 5, 9, 16}, ChunkRows: 8}.Blocks

// simStep is the true time of a step of rows rows, in decode steps.
func simStep(rows int, perRow float64) float64 {
	_, h := simBlocks(rows)
	return 1 + perRow*float64(h-1)
}

// simDraft is the true time of a drafter's call for k tokens.
func simDraft(k int) float64 {
	if k == 0 {
		return 0
	}
	return simDraftCall + simPerDraft*float64(k)
}

// simulate runs simRequests requests on a fresh engine and returns its tokens per decode
// step of time. fixedK >= 0 drafts that many every step (0: plain decoding); -1 plans.
func simulate(accept, perRow float64, fixedK int, seed uint64) float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	busyLeft := 0
	// observed is what the planner is told a step (or a drafter's call) of true time t took.
	observed := func(t float64) time.Duration {
		t *= math.Exp(simNoise * rng.NormFloat64())
		if busyLeft > 0 {
			t *= simBusy
		}
		return time.Duration(t * float64(100*time.Millisecond)) // a decode step of 100 ms
	}
	// spell starts or continues a busy spell before a step.
	spell := func() {
		if busyLeft > 0 {
			busyLeft--
		} else if rng.IntN(simBusyEvery) == 0 {
			busyLeft = simBusySteps
		}
	}
	cost, _ := spec.Calibrate(func(rows int) (time.Duration, error) {
		spell()
		return observed(simStep(rows, perRow)), nil
	}, 3)
	cost.SetBlocking(simBlocks)
	var engine spec.Acceptance
	tokens, elapsed := 0, 0.0
	for range simRequests {
		st := &seqState{}
		st.acc.Seed(&engine, spec.SeedDrafts)
		for n := 0; n < simTokens; {
			spell()
			room := spec.DraftRoom(simTokens, n, 1<<20, 0)
			k := min(fixedK, room)
			if fixedK < 0 {
				k = cost.Plan([]spec.PlanSeq{{Acc: &st.acc, MaxK: min(simMaxK, room)}}, 1, 0, func(int) bool { return st.probing() })[0]
				st.planned(k)
			}
			if k > 0 {
				st.idle = 0
			} else {
				st.idle++
			}
			accepted := 0
			for accepted < k && rng.Float64() < accept {
				accepted++
			}
			elapsed += simStep(1+k, perRow) + simDraft(k)
			cost.ObserveStep(1+k, observed(simStep(1+k, perRow)))
			if k > 0 {
				cost.ObserveDraft(k, observed(simDraft(k)))
				st.acc.Record(k, accepted)
				engine.Record(k, accepted)
				st.probeOutcome(accepted)
			}
			n += accepted + 1
			tokens += accepted + 1
		}
	}
	return float64(tokens) / elapsed
}

// simCell is one drafter on one device: the planner's throughput and every fixed length's,
// each the mean over simSeeds engines.
type simCell struct {
	accept, perRow float64
	adaptive       float64
	fixed          [simMaxK + 1]float64 // [0]: plain decoding
	bestK          int
}

func simulateCell(accept, perRow float64) simCell {
	c := simCell{accept: accept, perRow: perRow}
	for s := range simSeeds {
		seed := uint64(s + 1)
		c.adaptive += simulate(accept, perRow, -1, seed) / simSeeds
		for k := range c.fixed {
			c.fixed[k] += simulate(accept, perRow, k, seed) / simSeeds
		}
	}
	for k, v := range c.fixed {
		if v > c.fixed[c.bestK] {
			c.bestK = k
		}
	}
	return c
}

// simAccepts and simPerRows are the grid: drafters right 10-100% of the time, on devices where
// a verified row costs from a twentieth of a decode step (a GPU) to a whole one.
var (
	simAccepts = []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}
	simPerRows = []float64{0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1}
)

// simBelowPlain is how far below plain decoding the planner may fall where drafting does not
// pay: what it spends probing and on the drafts its first estimates let in.
const simBelowPlain = 0.03

// Over the whole grid, the planner's throughput is within 5% of the best fixed draft length's
// (plain decoding counted as length 0), and never more than simBelowPlain below plain
// decoding's.
func TestPlannerSimulation(t *testing.T) {
	var table strings.Builder
	fmt.Fprintf(&table, "accept perRow  adaptive  best fixed (k)  plain\n")
	worst := 1.0
	for _, a := range simAccepts {
		for _, r := range simPerRows {
			c := simulateCell(a, r)
			best := c.fixed[c.bestK]
			ratio := c.adaptive / best
			worst = min(worst, ratio)
			fmt.Fprintf(&table, "%5.2f  %5.2f  %8.3f  %8.3f (%d)  %6.3f  %5.1f%%\n", a, r, c.adaptive, best, c.bestK, c.fixed[0], 100*(ratio-1))
			if ratio < 0.95 {
				t.Errorf("right %.0f%%, a row %.2f of a step: adaptive %.3f tokens a step, %.1f%% below fixed k %d's %.3f",
					100*a, r, c.adaptive, 100*(1-ratio), c.bestK, best)
			}
			if c.adaptive < (1-simBelowPlain)*c.fixed[0] {
				t.Errorf("right %.0f%%, a row %.2f of a step: adaptive %.3f tokens a step, below plain decoding's %.3f by %.1f%%",
					100*a, r, c.adaptive, c.fixed[0], 100*(1-c.adaptive/c.fixed[0]))
			}
		}
	}
	t.Logf("worst: %.1f%% of the best fixed length\n%s", 100*worst, table.String())
}
