package distill

import (
	"fmt"
	"math"
	"math/rand"
	"time"
)

// Trainer is a drafter being trained: its parameters, and one batch's forward and backward
// passes over whole sequences of its dataset (gradients added into the parameters' G).
type Trainer interface {
	Params() []*Param
	Step(seqs []int) StepStats
}

// TrainOptions choose the optimisation.
type TrainOptions struct {
	Epochs      float64 // passes over the training sequences
	BatchRows   int     // positions per optimizer step (whole sequences; at least one)
	LR          float64 // peak learning rate
	Warmup      float64 // fraction of the steps warming up linearly (default 0.05)
	Floor       float64 // the cosine decays to Floor*LR (default 0.1)
	WeightDecay float64 // AdamW decoupled weight decay on matrices
	Clip        float64 // global gradient-norm clip (default 1)
	Beta2       float64 // default 0.95
	Seed        int64
	ValEvery    int // validation every this many steps (default: 20 times in all)
	// Progress, when set, is told after every step.
	Progress func(Progress)
}

// Progress is the state of a training run after a step.
type Progress struct {
	Step, Steps int
	Loss        float64   // this step's loss
	RowsPerSec  float64   // positions trained per second, on average so far
	Acc         []float64 // per TTT step / head: argmax agreement with the target, this step
	Val         float64   // the last validation loss (NaN before the first)
}

// Point is one step of the loss curve.
type Point struct {
	Step int
	Loss float64 // training loss of the step
	Val  float64 // validation loss, NaN when not measured at this step
}

// batches cuts seqs (shuffled by rng) into batches of about rows positions.
func batches(d *Dataset, seqs []int, rows int, rng *rand.Rand) [][]int {
	order := append([]int(nil), seqs...)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	var out [][]int
	var cur []int
	n := 0
	for _, s := range order {
		cur = append(cur, s)
		if n += d.SeqLen(s); n >= rows {
			out, cur, n = append(out, cur), nil, 0
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// Train optimises tr with AdamW over the sequences train of d, measuring the loss on val
// (not trained on) along the way, and returns the loss curve.
func Train(tr Trainer, d *Dataset, train, val []int, o TrainOptions) ([]Point, error) {
	if len(train) == 0 {
		return nil, fmt.Errorf("distill: no training sequences")
	}
	positive := func(x float64) bool { return x > 0 && !math.IsInf(x, 0) } // NaN is not
	if o.BatchRows <= 0 || !positive(o.Epochs) || !positive(float64(o.LR)) {
		return nil, fmt.Errorf("distill: training needs finite positive epochs, batch rows and learning rate (got %v, %d, %v)", o.Epochs, o.BatchRows, o.LR)
	}
	if o.Warmup == 0 {
		o.Warmup = 0.05
	}
	if o.Floor == 0 {
		o.Floor = 0.1
	}
	opt := NewAdamW(tr.Params())
	opt.WeightDecay = o.WeightDecay
	if o.Clip != 0 {
		opt.Clip = o.Clip
	}
	if o.Beta2 != 0 {
		opt.Beta2 = o.Beta2
	}
	rng := rand.New(rand.NewSource(o.Seed))
	perEpoch := len(batches(d, train, o.BatchRows, rand.New(rand.NewSource(0))))
	steps := max(1, int(math.Round(o.Epochs*float64(perEpoch))))
	warm := int(o.Warmup * float64(steps))
	valEvery := o.ValEvery
	if valEvery <= 0 {
		valEvery = max(1, steps/20)
	}
	var curve []Point
	var queue [][]int
	start := time.Now()
	rows := 0
	lastVal := math.NaN()
	// The validation loss is measured on at most maxValRows positions, so that measuring it
	// 20 times costs a few percent of the run.
	const maxValRows = 2048
	for n, i := 0, 0; i < len(val); i++ {
		if n += d.SeqLen(val[i]); n > maxValRows && i > 0 {
			val = val[:i]
			break
		}
	}
	validate := func() float64 {
		if len(val) == 0 {
			return math.NaN()
		}
		var loss float64
		n := 0
		for _, b := range batches(d, val, o.BatchRows, rand.New(rand.NewSource(1))) {
			st := tr.Step(b)
			loss += st.Loss * float64(st.Rows)
			n += st.Rows
		}
		opt.ZeroGrad()
		return loss / float64(max(n, 1))
	}
	for s := range steps {
		if len(queue) == 0 {
			queue = batches(d, train, o.BatchRows, rng)
		}
		b := queue[0]
		queue = queue[1:]
		opt.ZeroGrad()
		st := tr.Step(b)
		if math.IsNaN(st.Loss) || math.IsInf(st.Loss, 0) {
			return curve, fmt.Errorf("distill: the loss diverged at step %d (%v)", s, st.Loss)
		}
		opt.Step(Schedule(s, steps, warm, o.LR, o.Floor))
		rows += st.Rows
		p := Point{Step: s, Loss: st.Loss, Val: math.NaN()}
		if (s+1)%valEvery == 0 || s == steps-1 {
			lastVal = validate()
			p.Val = lastVal
		}
		curve = append(curve, p)
		if o.Progress != nil {
			acc := make([]float64, len(st.Hits))
			for i := range acc {
				acc[i] = st.Hits[i] / max(st.Cnt[i], 1)
			}
			o.Progress(Progress{Step: s + 1, Steps: steps, Loss: st.Loss, Acc: acc, Val: lastVal,
				RowsPerSec: float64(rows) / time.Since(start).Seconds()})
		}
	}
	return curve, nil
}
