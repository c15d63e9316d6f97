package spec

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Adaptive speculation: each step, every sequence drafts as many tokens as pay for
// themselves. Drafting a j-th token is worth its expected gain, the chance that drafts 1..j
// are all accepted, against its cost: one more row in the step (every sequence of the step
// waits for it) and the drafter's time, which has a part paid once per call (an EAGLE head's
// catch-up, a draft model's first step) and a part per token. So a step plans its drafts
// greedily, the run of next drafts with the best gain per cost first, while each run adds
// more tokens per second than the step's current rate:
//
//	sum gain(j..j+m) / (m (PerRow + PerDraft) + [j = 0] DraftCall)  >  tokens(step) / time(step)
//
// With one sequence on a GPU (a row costs little beside the step) good drafts go in; on a CPU
// device, or in a large batch (the step's rate is high, so a draft must be likelier), they
// stop. The acceptance is learnt per sequence and position, the costs per engine.

// CostModel is what a step costs on this engine: Fixed + PerRow x rows computed + PerBlock x
// blocks past the first (Blocking), and a drafter's call for n tokens DraftCall + PerDraft x
// n. It starts from a calibration (Calibrate) and learns from the batch and drafts it is told
// about: the mean time of each row count (and of each draft length), fitted by a line over the
// steps of one block; the steps of several blocks give PerBlock.
type CostModel struct {
	mu        sync.Mutex
	fixed     float64 // seconds
	perRow    float64
	draftCall float64
	perDraft  float64
	byRows    map[int]*ema // step time by row count
	byHeight  map[int]*ema // the time of a step run as one block, by the block's height
	byDrafts  map[int]*ema // drafter call time by tokens drafted
	// blocking is how the device runs a step's rows (nil: one block of the rows).
	blocking Blocking
	// seeded are step times measured once at load, which price a block (perBlock) before
	// steps of several blocks are observed: what a full batch costs and one more row past it.
	seeded  map[int]float64
	slowRun int // steps in a row left out as a busy machine's (ObserveStep)
}

// Blocking is how a device runs a step of n rows: in blocks blocks, each reading the
// weights once, that compute computed rows in all (n padded up to a block's height). A step
// then costs
//
//	fixed + perRow x computed + perBlock x (blocks - 1)
//
// so a draft that fills a block's padding is nearly free and one that opens a block is dear.
type Blocking func(n int) (blocks, computed int)

// ema is a mean that weighs the last Memory observations most (its weight: about how many).
type ema struct{ mean, weight float64 }

func (e *ema) add(v float64) {
	e.weight = e.weight*emaDecay + 1
	e.mean += (v - e.mean) / e.weight
}

// NewCostModel starts from a step of one row costing decode and each extra row perRow.
func NewCostModel(decode, perRow time.Duration) *CostModel {
	return &CostModel{fixed: (decode - perRow).Seconds(), perRow: perRow.Seconds(), byRows: map[int]*ema{}, byHeight: map[int]*ema{}, byDrafts: map[int]*ema{}}
}

// ObserveStep records a step of rows rows that took d. A step slowStep times slower than
// its row count's mean is a busy machine's and is left out, up to Memory of them in a row
// (then the machine is that slow now): a busy spell slows the steps the plan makes then, and
// counted, it makes those row counts look dear beside the others.
func (c *CostModel) ObserveStep(rows int, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byRows[rows]; e != nil && e.weight >= minFitWeight && d.Seconds() > slowStep*e.mean {
		if c.slowRun < Memory {
			c.slowRun++
			return
		}
	} else {
		c.slowRun = 0
	}
	observe(c.byRows, rows, d)
	if b, comp := c.shape(rows); b == 1 {
		observe(c.byHeight, comp, d)
	}
	c.fixed, c.perRow = fitLine(c.byRows, c.oneBlock, c.fixed, c.perRow)
}

// SetBlocking tells the model how the device runs a step's rows.
func (c *CostModel) SetBlocking(b Blocking) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.blocking = b
	c.fixed, c.perRow = fitLine(c.byRows, c.oneBlock, c.fixed, c.perRow)
}

// shape is blocking's answer for n rows (one block of n without one).
func (c *CostModel) shape(n int) (blocks, computed int) { return c.blocking.of(n) }

// of is b's answer for n rows, one block of n for a nil b.
func (b Blocking) of(n int) (blocks, computed int) {
	if b == nil {
		return 1, n
	}
	return b(n)
}

// oneBlock is the line's x for a step of n rows, its computed rows, when it runs as one
// block (steps of several blocks price perBlock instead).
func (c *CostModel) oneBlock(n int) (float64, bool) {
	b, comp := c.shape(n)
	return float64(comp), b == 1
}

// perBlock is what a step's second and later blocks cost each beyond the line: the mean
// excess of the observed steps of several blocks seen often enough lately to trust (a weight
// of trustBlock: about once in every 14 steps, or a few times in a row), else of the seeded
// ones (0 when there are none).
func (c *CostModel) perBlock() float64 {
	excess := func(n int, d float64) (float64, bool) {
		b, comp := c.shape(n)
		if b < 2 {
			return 0, false
		}
		return max(0, (d-c.fixed-c.perRow*float64(comp))/float64(b-1)), true
	}
	var sum, w float64
	for n, e := range c.byRows {
		if x, ok := excess(n, e.mean); ok && e.weight >= trustBlock {
			sum, w = sum+x*e.weight, w+e.weight
		}
	}
	if w == 0 {
		for n, d := range c.seeded {
			if x, ok := excess(n, d); ok {
				sum, w = sum+x, w+1
			}
		}
	}
	if w == 0 {
		return 0
	}
	return sum / w
}

// ObserveDraft records a drafter's call that proposed tokens tokens in d.
func (c *CostModel) ObserveDraft(tokens int, d time.Duration) {
	if tokens <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	observe(c.byDrafts, tokens, d)
	if len(c.byDrafts) == 1 { // one length seen: no telling the call from the tokens
		e := c.byDrafts[tokens]
		c.draftCall, c.perDraft = 0, e.mean/float64(tokens)
		return
	}
	c.draftCall, c.perDraft = fitLine(c.byDrafts, func(n int) (float64, bool) { return float64(n), true }, c.draftCall, c.perDraft)
}

// observe adds d to n's mean and fades every other n's.
func observe(by map[int]*ema, n int, d time.Duration) {
	e := by[n]
	if e == nil {
		e = &ema{}
		by[n] = e
	}
	for m, o := range by {
		if m != n {
			o.weight *= emaDecay
		}
	}
	e.add(d.Seconds())
}

// fitLine fits time = a + b x(n) to the mean times by n (weighted least squares) over the n
// that x accepts and that have not faded (minFitWeight), when two or more x are left and the
// fit has a positive slope and no negative intercept; otherwise it keeps the slope b and
// moves a (down to 0, the slope then taking the rest).
func fitLine(by map[int]*ema, x func(int) (float64, bool), a, b float64) (float64, float64) {
	var sw, sx, sy, sxx, sxy float64
	xs := map[float64]bool{}
	for n, e := range by {
		xn, ok := x(n)
		if !ok || e.weight < minFitWeight {
			continue
		}
		w := e.weight
		sw, sx, sy, sxx, sxy = sw+w, sx+w*xn, sy+w*e.mean, sxx+w*xn*xn, sxy+w*xn*e.mean
		xs[xn] = true
	}
	if sw == 0 {
		return a, b
	}
	if len(xs) >= 2 {
		if den := sw*sxx - sx*sx; den > 0 {
			slope := (sw*sxy - sx*sy) / den
			if icpt := (sy - slope*sx) / sw; slope > 0 && icpt >= 0 {
				return icpt, slope
			}
		}
	}
	if a = (sy - b*sx) / sw; a < 0 {
		a, b = 0, sy/sx
	}
	return a, b
}

// SeedSteps gives the model the times of steps of some row counts measured once (a full
// batch and one row more), to price a block before steps of several blocks are observed;
// they do not move the line.
func (c *CostModel) SeedSteps(times map[int]time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seeded == nil {
		c.seeded = map[int]float64{}
	}
	for n, d := range times {
		c.seeded[n] = d.Seconds()
	}
}

// Costs returns the current estimates: a step of n rows costs fixed + n perRow, and a
// drafter's call for m tokens draftCall + m perDraft.
func (c *CostModel) Costs() (fixed, perRow, draftCall, perDraft time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	return sec(c.fixed), sec(c.perRow), sec(c.draftCall), sec(c.perDraft)
}

// DraftRoom is the most drafts a sequence's next step can verify: a step emits its drafts and
// one token more, so the output (generated of at most maxNew tokens) and the context (ctxLen
// of maxSeq) must have room for them all.
func DraftRoom(maxNew, generated, maxSeq, ctxLen int) int {
	return max(0, min(maxNew-generated-1, maxSeq-ctxLen-1))
}

// PlanSeq is one sequence of a step being planned.
type PlanSeq struct {
	Acc  *Acceptance // nil: no drafter
	MaxK int         // drafts at most (the request's k, the room left)
}

// Plan chooses each sequence's draft length for a step of decodeRows rows (one per decoding
// sequence) and promptRows rows of prompts: greedily, the run of a sequence's next drafts
// with the most expected tokens per second of cost first, while it beats the rate of a step
// of the decoding rows alone. A run's cost is the drafter's time and what its rows add to the
// whole step, by the device's blocking: nothing where they fill a block's padding, a block
// where they open one (so a step that prefills prompts too, already several blocks, prices
// drafts by its own blocks). probe forces one draft on sequences whose plan would be none, so
// that their acceptance keeps being measured, unless that draft would open a block (it is
// asked again at a later step).
func (c *CostModel) Plan(seqs []PlanSeq, decodeRows, promptRows int, probe func(i int) bool) []int {
	c.mu.Lock()
	fixed, perRow, draftCall, perDraft := c.fixed, c.perRow, c.draftCall, c.perDraft
	perBlock, blocking, heights := c.perBlock(), c.blocking, c.heightPrices()
	c.mu.Unlock()
	step := func(n int) float64 {
		b, comp := blocking.of(n)
		line := fixed + perRow*float64(comp) + perBlock*float64(b-1)
		if b == 1 {
			return heights.price(comp, line, perRow)
		}
		return line
	}
	ks := make([]int, len(seqs))
	tokens := float64(len(seqs))
	rows := decodeRows + promptRows
	elapsed := step(decodeRows)
	for perRow+perDraft > 0 {
		best, bestM, bestGain, bestCost := -1, 0, 0.0, 0.0
		for i, s := range seqs {
			if s.Acc == nil {
				continue
			}
			gain, call := 0.0, 0.0
			if ks[i] == 0 {
				call = draftCall
			}
			for m := 1; ks[i]+m <= s.MaxK; m++ {
				gain += s.Acc.Hopeful(ks[i] + m - 1)
				cost := call + perDraft*float64(m) + step(rows+m) - step(rows)
				if best < 0 || gain*bestCost > bestGain*cost {
					best, bestM, bestGain, bestCost = i, m, gain, cost
				}
			}
		}
		if best < 0 || bestGain*elapsed <= tokens*bestCost {
			break
		}
		ks[best] += bestM
		rows += bestM
		tokens += bestGain
		elapsed += bestCost
	}
	for i, s := range seqs {
		if ks[i] == 0 && s.Acc != nil && s.MaxK > 0 && probe != nil && sameBlocks(blocking, rows, rows+1) && probe(i) {
			ks[i] = 1
			rows++
		}
	}
	return ks
}

// sameBlocks reports whether steps of a and b rows run in as many blocks.
func sameBlocks(blocking Blocking, a, b int) bool {
	ba, _ := blocking.of(a)
	bb, _ := blocking.of(b)
	return ba == bb
}

// CalibrationRows are the row counts Calibrate times.
var CalibrationRows = []int{1, 2, 3, 5, 9}

// Calibrate fits a cost model to the fastest of reps step times measured for each of
// CalibrationRows: step(rows) runs one step of that many rows and returns its time. The row
// counts take turns, and the fastest time is kept, since a busy machine only ever slows a step:
// a busy spell during calibration then has to cover every repetition of a row count to count.
func Calibrate(step func(rows int) (time.Duration, error), reps int) (*CostModel, error) {
	times := map[int][]time.Duration{}
	for r := 0; r < reps; r++ {
		for _, rows := range CalibrationRows {
			d, err := step(rows)
			if err != nil {
				return nil, err
			}
			times[rows] = append(times[rows], d)
		}
	}
	fastest := map[int]time.Duration{}
	for rows, ts := range times {
		fastest[rows] = slices.Min(ts)
	}
	first, last := CalibrationRows[0], CalibrationRows[len(CalibrationRows)-1]
	per := time.Duration(math.Max(0, float64(fastest[last]-fastest[first])/float64(last-first)))
	c := NewCostModel(fastest[first], per)
	for _, rows := range CalibrationRows { // in order: each observation fades the others'
		c.ObserveStep(rows, fastest[rows])
	}
	return c, nil
}
