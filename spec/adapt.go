package spec

import (
	"math"
	"sort"
	"sync"
	"time"
)

// Adaptive speculation: each step, every sequence drafts as many tokens as pay for
// themselves. Drafting a j-th token is worth its expected gain, the chance that drafts 1..j
// are all accepted, against its cost: one more row in the step (every sequence of the step
// waits for it) and the drafter's time. So a step plans its drafts greedily, the likeliest
// first, while each adds more tokens per second than the step's current rate:
//
//	gain(j) / (PerRow + PerDraft)  >  tokens(step) / time(step)
//
// With one sequence on a GPU (a row costs little beside the step) good drafts go in; on a CPU
// device, or in a large batch (the step's rate is high, so a draft must be likelier), they
// stop. The acceptance is learnt per sequence and position, the costs per engine.

// Acceptance is what a sequence's drafts have been worth: per draft position, decayed counts
// of the drafts proposed there and accepted (a draft is only tried when those before it were
// accepted, so accepted/proposed at j is the chance of j given j-1).
type Acceptance struct {
	proposed, accepted [MaxSpeculativeTokens]float64
}

// acceptanceDecay weighs past steps: about the last 50 count.
const acceptanceDecay = 0.98

// Record counts a step that proposed nDraft drafts of which the first accepted were kept.
func (a *Acceptance) Record(nDraft, accepted int) {
	for j := 0; j < nDraft && j < MaxSpeculativeTokens; j++ {
		a.proposed[j] *= acceptanceDecay
		a.accepted[j] *= acceptanceDecay
		if j <= accepted { // reached: the drafts before it were accepted
			a.proposed[j]++
			if j < accepted {
				a.accepted[j]++
			}
		}
	}
}

// Rate is the estimated chance that draft j (0-based) is accepted given the ones before it
// were, with a prior of one half worth two drafts.
func (a *Acceptance) Rate(j int) float64 {
	return (a.accepted[j] + 1) / (a.proposed[j] + 2)
}

// Chain is the chance that drafts 0..j are all accepted.
func (a *Acceptance) Chain(j int) float64 {
	p := 1.0
	for i := 0; i <= j; i++ {
		p *= a.Rate(i)
	}
	return p
}

// CostModel is what a step costs on this engine: Fixed + PerRow x rows, and each drafted
// token PerDraft. It starts from a calibration (Calibrate) and learns from the steps it is
// told about: the mean time of steps of each row count, fitted by a line.
type CostModel struct {
	mu       sync.Mutex
	fixed    float64 // seconds
	perRow   float64
	perDraft float64
	byRows   map[int]*ema // step time by row count
}

type ema struct{ mean, weight float64 }

func (e *ema) add(v float64) {
	const decay = 0.95
	e.weight = e.weight*decay + 1
	e.mean += (v - e.mean) / e.weight
}

// NewCostModel starts from a step of one row costing decode and each extra row perRow.
func NewCostModel(decode, perRow time.Duration) *CostModel {
	return &CostModel{fixed: (decode - perRow).Seconds(), perRow: perRow.Seconds(), byRows: map[int]*ema{}}
}

// ObserveStep records a step of rows rows that took d.
func (c *CostModel) ObserveStep(rows int, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byRows[rows]
	if e == nil {
		e = &ema{}
		c.byRows[rows] = e
	}
	e.add(d.Seconds())
	c.fit()
}

// ObserveDraft records a drafter's call that proposed tokens tokens in d.
func (c *CostModel) ObserveDraft(tokens int, d time.Duration) {
	if tokens <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	per := d.Seconds() / float64(tokens)
	c.perDraft += (per - c.perDraft) * 0.1
}

// fit refits Fixed and PerRow to the row counts seen, when two or more have been (weighted
// least squares); with one, it keeps PerRow and moves Fixed.
func (c *CostModel) fit() {
	var sw, sx, sy, sxx, sxy float64
	for rows, e := range c.byRows {
		w, x := e.weight, float64(rows)
		sw, sx, sy, sxx, sxy = sw+w, sx+w*x, sy+w*e.mean, sxx+w*x*x, sxy+w*x*e.mean
	}
	if len(c.byRows) >= 2 {
		den := sw*sxx - sx*sx
		if den > 0 {
			slope := (sw*sxy - sx*sy) / den
			if slope > 0 {
				c.perRow = slope
				c.fixed = (sy - slope*sx) / sw
				return
			}
		}
	}
	c.fixed = (sy - c.perRow*sx) / sw
}

// Costs returns the current estimates.
func (c *CostModel) Costs() (fixed, perRow, perDraft time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	return sec(c.fixed), sec(c.perRow), sec(c.perDraft)
}

// PlanSeq is one sequence of a step being planned.
type PlanSeq struct {
	Acc  *Acceptance // nil: no drafter
	MaxK int         // drafts at most (the request's k, the room left)
}

// Plan chooses each sequence's draft length for a step whose rows without drafts are
// baseRows (one per decoding sequence, plus prompt chunks), greedily by expected gain per
// cost, while each added draft raises the step's tokens per second. probe forces one draft
// on sequences whose plan would be none, so that their acceptance keeps being measured.
func (c *CostModel) Plan(seqs []PlanSeq, baseRows int, probe func(i int) bool) []int {
	fixed, perRow, perDraft := c.Costs()
	ks := make([]int, len(seqs))
	tokens := float64(len(seqs))
	elapsed := (fixed + perRow*time.Duration(baseRows)).Seconds()
	unit := (perRow + perDraft).Seconds()
	type cand struct {
		i    int
		gain float64
	}
	for {
		var best *cand
		for i, s := range seqs {
			if s.Acc == nil || ks[i] >= s.MaxK {
				continue
			}
			if g := s.Acc.Chain(ks[i]); best == nil || g > best.gain {
				best = &cand{i, g}
			}
		}
		if best == nil || unit <= 0 || best.gain/unit <= tokens/elapsed {
			break
		}
		ks[best.i]++
		tokens += best.gain
		elapsed += unit
	}
	for i, s := range seqs {
		if ks[i] == 0 && s.Acc != nil && s.MaxK > 0 && probe != nil && probe(i) {
			ks[i] = 1
		}
	}
	return ks
}

// CalibrationRows are the row counts Calibrate times.
var CalibrationRows = []int{1, 5, 9}

// Calibrate fits a cost model to median step times measured for CalibrationRows: step(rows)
// runs one step of that many rows and returns its time.
func Calibrate(step func(rows int) (time.Duration, error), reps int) (*CostModel, error) {
	med := map[int]time.Duration{}
	for _, rows := range CalibrationRows {
		var ts []time.Duration
		for r := 0; r < reps; r++ {
			d, err := step(rows)
			if err != nil {
				return nil, err
			}
			ts = append(ts, d)
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		med[rows] = ts[len(ts)/2]
	}
	first, last := CalibrationRows[0], CalibrationRows[len(CalibrationRows)-1]
	per := time.Duration(math.Max(0, float64(med[last]-med[first])/float64(last-first)))
	c := NewCostModel(med[first], per)
	for rows, d := range med {
		c.ObserveStep(rows, d)
	}
	return c, nil
}
