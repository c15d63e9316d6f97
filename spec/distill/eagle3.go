package distill

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sort"

	"github.com/wspec/wspec/weights"
)

// Eagle3Options size an EAGLE-3 head.
type Eagle3Options struct {
	DraftVocab int  // Vd: rows of the head's LM head, the tokens of most TokenMass
	TTT        int  // training-time-test steps (EAGLE-3 unrolls 7)
	Hidden     int  // the layer's intermediate size (default the target's)
	WarmStart  bool // start the layer from the target's last layer (see NewEagle3)
	Seed       int64
}

// Eagle3 trains an EAGLE-3 head (drafters.md, distill.md section 3) on a Dataset whose Aux
// are the head's aux layers. Row t of a sequence takes the target's residuals entering the
// aux layers at position t and the embedding of x_{t+1}; step k of the training-time test
// takes the head's own output of step k-1 (before the final norm) and the true token
// x_{t+1+k}, at position t+k, attending to the step-0 rows 0..t and its own earlier steps.
// Its loss is the soft cross-entropy over the draft vocabulary to the target's distribution
// at position t+1+k (renormalised over the draft vocabulary; rows whose target argmax is
// outside it masked), averaged over all rows, weighted 0.8^k.
type Eagle3 struct {
	o       Eagle3Options
	target  *weights.LlamaWeights
	ds      *Dataset
	H       int
	FC      *Param  // [H, 3H]
	InNorm  *Param  // [H] input_layernorm (embedding)
	HidNorm *Param  // [H] hidden_norm (feature)
	L       *layer  // in = 2H
	Norm    *Param  // [H]
	Head    *Param  // [Vd, H]
	used    []int32 // draft id -> target id (ascending)
	t2d     []int32 // target id -> draft id, or -1
	// keep, when set, has Step copy each TTT step's logits into kept (for tests).
	keep     bool
	kept     [][]float32
	Coverage float64 // fraction of the target's next-token probability mass inside the draft vocabulary
}

// TokenMass is the target's expected count of each token id as the next token over the
// positions of d: the sum of its (top-K) probabilities. It ranks the tokens a draft
// vocabulary should hold more broadly than the sampled tokens do: a name or a word the
// target would say in some context counts even where the data went another way.
func TokenMass(d *Dataset, vocab int) []float64 {
	mass := make([]float64, vocab)
	ids, probs := make([]int32, d.K), make([]float32, d.K)
	for i := range d.Len() {
		d.Teacher(i, ids, probs)
		for j, id := range ids {
			mass[id] += float64(probs[j])
		}
	}
	return mass
}

// DraftVocab picks the vd ids of largest mass (ties to the lower id), sorted ascending, and
// the fraction of the mass they cover.
func DraftVocab(mass []float64, vd int) ([]int32, float64) {
	ids := make([]int32, len(mass))
	for i := range ids {
		ids[i] = int32(i)
	}
	sort.SliceStable(ids, func(a, b int) bool { return mass[ids[a]] > mass[ids[b]] })
	used := slices.Clone(ids[:vd])
	slices.Sort(used)
	var in, all float64
	for i, c := range mass {
		all += c
		if _, ok := slices.BinarySearch(used, int32(i)); ok {
			in += c
		}
	}
	return used, in / max(all, 1e-30)
}

// NewEagle3 makes a head for target t trained on d. The draft vocabulary is the vd tokens
// of most TokenMass. The LM head starts as the target's embedding rows of those tokens
// and the final norm as the target's (so logits start on the target's scale); with
// WarmStart, fc starts by passing the last aux feature through, hidden_norm and the layer
// as the target's last layer on it (so step 0 starts out reproducing the target's own last
// hidden state), else from N(0, 0.02^2).
func NewEagle3(t *weights.LlamaWeights, d *Dataset, o Eagle3Options) (*Eagle3, error) {
	c := t.Cfg
	H, V := c.Dim, c.Vocab
	if o.Hidden == 0 {
		o.Hidden = c.HiddenDim
	}
	if o.TTT < 1 || o.TTT > 16 {
		return nil, fmt.Errorf("distill: %d training-time-test steps (want 1..16)", o.TTT)
	}
	if o.DraftVocab < 1 || o.DraftVocab > V {
		return nil, fmt.Errorf("distill: draft vocabulary of %d for a vocabulary of %d", o.DraftVocab, V)
	}
	if len(d.Aux) != 3 || d.Dim != H {
		return nil, fmt.Errorf("distill: EAGLE-3 needs a dataset of 3 aux layers of width %d, this one has %v of %d", H, d.Aux, d.Dim)
	}
	if c.NHeads*c.HeadDim != H {
		return nil, fmt.Errorf("distill: %w: heads*head_dim %d != hidden size %d", weights.ErrUnsupported, c.NHeads*c.HeadDim, H)
	}
	rng := rand.New(rand.NewSource(o.Seed))
	e := &Eagle3{o: o, target: t, ds: d, H: H}
	e.used, e.Coverage = DraftVocab(TokenMass(d, V), o.DraftVocab)
	e.t2d = make([]int32, V)
	for i := range e.t2d {
		e.t2d[i] = -1
	}
	for i, id := range e.used {
		e.t2d[id] = int32(i)
	}
	rope := newRopeTable(c.HeadDim, c.MaxSeq+o.TTT+16, c.RopeTheta)
	e.FC = newParam("fc", true, H, 3*H).fillNormal(rng, 0.02)
	e.InNorm = newParam("input_layernorm", false, H).fillConst(1)
	e.HidNorm = newParam("hidden_norm", false, H).fillConst(1)
	e.L = newLayer("midlayer.", H, o.Hidden, 2*H, c.NHeads, c.RMSEps, rope, rng)
	e.Norm = newParam("norm", false, H)
	copy(e.Norm.W, t.Norm)
	e.Head = newParam("lm_head", true, o.DraftVocab, H)
	for i, id := range e.used {
		copy(e.Head.W[i*H:(i+1)*H], t.LMHead[int(id)*H:])
	}
	if o.WarmStart {
		if o.Hidden < c.HiddenDim {
			return nil, fmt.Errorf("distill: a warm start needs an intermediate size of at least the target's %d", c.HiddenDim)
		}
		e.warmStart()
	}
	return e, nil
}

// warmStart copies the target's last layer into the head (see NewEagle3).
func (e *Eagle3) warmStart() {
	t, H := e.target, e.H
	last := t.Layers[len(t.Layers)-1]
	clear(e.FC.W)
	for i := range H {
		e.FC.W[i*3*H+2*H+i] = 1
	}
	copy(e.HidNorm.W, last.AttnNorm)
	// The head has a key/value head per query head: a target that shares each among a group
	// of query heads gives every head of the group its shared one's rows.
	w := e.L.Wqkv.W
	hd, group := t.Cfg.HeadDim, t.Cfg.NHeads/t.Cfg.NKVHeads
	for r, src := range [][]float32{last.Wq, last.Wk, last.Wv} {
		for i := range H {
			j := i // the source row
			if r > 0 {
				j = (i/hd/group)*hd + i%hd
			}
			copy(w[(r*H+i)*2*H+H:(r*H+i+1)*2*H], src[j*H:(j+1)*H])
		}
	}
	copy(e.L.Wo.W, last.Wo)
	copy(e.L.PostNorm.W, last.FFNNorm)
	// The target's MLP fills the first of the head's intermediate units; any more start with
	// random gate/up rows and a zero down projection, so they add nothing at first.
	I, It := e.o.Hidden, t.Cfg.HiddenDim
	copy(e.L.W13.W, last.WGate)
	copy(e.L.W13.W[I*H:], last.WUp)
	for r := range H {
		row := e.L.W2.W[r*I : (r+1)*I]
		copy(row, last.WDown[r*It:(r+1)*It])
		clear(row[It:])
	}
}

// SetTTT changes the number of training-time-test steps (1..16) for the next batches: a
// run may train depth 1 alone first, which costs a quarter as much per position, and then
// all the depths.
func (e *Eagle3) SetTTT(n int) error {
	if n < 1 || n > 16 {
		return fmt.Errorf("distill: %d training-time-test steps (want 1..16)", n)
	}
	e.o.TTT = n
	return nil
}

// Params are the trainable tensors.
func (e *Eagle3) Params() []*Param {
	return append([]*Param{e.FC, e.InNorm, e.HidNorm, e.Norm, e.Head}, e.L.params()...)
}

// e3step is one TTT step's activations.
type e3step struct {
	g, emb, en, gn, rse, rsg []float32
	a                        *layerAct
	dloss                    []float32 // [R, H] the loss gradient at o (through the final norm)
}

// StepStats are one batch's results.
type StepStats struct {
	Loss      float64   // the weighted loss
	Rows      int       // positions trained
	Hits, Cnt []float64 // per step: rows whose argmax is the target's, rows counted
}

// Step runs the forward and backward passes over the sequences seqs of the dataset, adding
// the gradients of the batch's loss into the parameters' G.
func (e *Eagle3) Step(seqs []int) StepStats {
	d, H, n := e.ds, e.H, e.o.TTT
	Vd := len(e.used)
	off := []int{0}
	for _, s := range seqs {
		off = append(off, off[len(off)-1]+d.SeqLen(s)-1)
	}
	R := off[len(off)-1]
	st := StepStats{Rows: R, Hits: make([]float64, n), Cnt: make([]float64, n)}
	feat := make([]float32, R*3*H)
	for i, s := range seqs {
		d.AuxRows(feat[off[i]*3*H:], d.Off[s], d.Off[s+1]-1)
	}
	steps := make([]*e3step, n)
	logits := make([]float32, R*Vd)
	K := d.K
	tIDs, tProbs := make([]int32, R*K), make([]float32, R*K)
	var ck, cv, dck, dcv [][]float32
	var k0, v0, dk0, dv0 []float32
	g := make([]float32, R*H)
	linear(g, feat, e.FC.W, nil, R, H, 3*H)
	for k := range n {
		sp := &e3step{g: g}
		steps[k] = sp
		toks := make([]int, R)
		pos := make([]int, R)
		teach := make([]teacher, R)
		for i, s := range seqs {
			T := d.SeqLen(s)
			for t := range T - 1 {
				r := off[i] + t
				pos[r] = t + k
				if t+1+k > T-1 {
					continue
				}
				p := d.Off[s] + t + 1 + k
				toks[r] = int(d.Tokens[p])
				ids, probs := tIDs[r*K:(r+1)*K], tProbs[r*K:(r+1)*K]
				d.Teacher(p, ids, probs)
				if e.t2d[ids[0]] < 0 {
					continue // the target's argmax is outside the draft vocabulary: masked
				}
				m, sum := 0, float32(0)
				for j := range K {
					if dj := e.t2d[ids[j]]; dj >= 0 && probs[j] > 0 {
						ids[m], probs[m] = dj, probs[j]
						sum += probs[j]
						m++
					}
				}
				for j := range m {
					probs[j] /= sum
				}
				teach[r] = teacher{ids: ids[:m], probs: probs[:m], w: float32(math.Pow(0.8, float64(k)) / float64(R))}
			}
		}
		sp.emb = make([]float32, R*H)
		for r, tok := range toks {
			copy(sp.emb[r*H:(r+1)*H], e.target.Embed[tok*H:])
		}
		sp.en, sp.gn, sp.rse, sp.rsg = make([]float32, R*H), make([]float32, R*H), make([]float32, R), make([]float32, R)
		rmsNorm(sp.en, sp.emb, e.InNorm.W, sp.rse, R, H, e.target.Cfg.RMSEps)
		rmsNorm(sp.gn, g, e.HidNorm.W, sp.rsg, R, H, e.target.Cfg.RMSEps)
		u := make([]float32, R*2*H)
		for r := range R {
			copy(u[r*2*H:], sp.en[r*H:(r+1)*H])
			copy(u[r*2*H+H:], sp.gn[r*H:(r+1)*H])
		}
		a := e.L.project(u, pos)
		sp.a = a
		if k == 0 {
			k0, v0, dk0, dv0 = a.k, a.v, a.dk, a.dv
		} else {
			ck, cv = append(ck, a.k), append(cv, a.v)
			dck, dcv = append(dck, a.dk), append(dcv, a.dv)
		}
		e.L.finish(a, g, off, k0, v0, ck, cv)
		// The loss of this step, and its gradient back to o, right away.
		on, rs := make([]float32, R*H), make([]float32, R)
		rmsNorm(on, a.o, e.Norm.W, rs, R, H, e.target.Cfg.RMSEps)
		linear(logits, on, e.Head.W, nil, R, Vd, H)
		if e.keep {
			e.kept = append(e.kept, slices.Clone(logits))
		}
		for r := range R {
			if teach[r].w == 0 {
				continue
			}
			st.Cnt[k]++
			if argmax(logits[r*Vd:(r+1)*Vd]) == int(teach[r].ids[0]) {
				st.Hits[k]++
			}
		}
		st.Loss += softCERows(logits, R, Vd, teach)
		don := make([]float32, R*H)
		linearBack(don, e.Head.G, nil, logits, on, e.Head.W, R, Vd, H)
		sp.dloss = make([]float32, R*H)
		rmsNormBack(sp.dloss, e.Norm.G, don, a.o, e.Norm.W, rs, R, H)
		g = a.o
	}
	// Backward, last step first: step k's keys and values are complete once every later
	// step's queries are through.
	var dnext []float32 // gradient at step k's output from step k+1's input
	for k := n - 1; k >= 0; k-- {
		sp := steps[k]
		do := sp.dloss
		for i, v := range dnext {
			do[i] += v
		}
		dg := make([]float32, R*H)
		var dckk, dcvk [][]float32
		if k > 0 {
			dckk, dcvk = dck[:k], dcv[:k]
		}
		e.L.backFinish(sp.a, do, dg, dk0, dv0, dckk, dcvk)
		du := make([]float32, R*2*H)
		e.L.backProject(sp.a, du)
		den, dgn := make([]float32, R*H), make([]float32, R*H)
		for r := range R {
			copy(den[r*H:(r+1)*H], du[r*2*H:])
			copy(dgn[r*H:(r+1)*H], du[r*2*H+H:])
		}
		rmsNormBack(nil, e.InNorm.G, den, sp.emb, e.InNorm.W, sp.rse, R, H)
		rmsNormBack(dg, e.HidNorm.G, dgn, sp.g, e.HidNorm.W, sp.rsg, R, H)
		dnext = dg
	}
	linearBack(nil, e.FC.G, nil, dnext, feat, e.FC.W, R, H, 3*H)
	return st
}

// argmax is the index of the largest value (the lowest on ties).
func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
