package distill

import (
	"fmt"
	"math/rand"

	"github.com/wspec/wspec/weights"
)

// Eagle1Options size an EAGLE-1 head.
type Eagle1Options struct {
	Hidden int     // the layer's intermediate size (default the target's)
	Noise  float64 // uniform noise U(-Noise, Noise) on the input features (EAGLE: 0.1)
	Vocab  int     // rows of the LM head the soft cross-entropy is taken over (0: all; see trainVocab)
	Seed   int64
}

// Eagle1 trains an EAGLE-1 head (distill.md section 2): row t takes [E x_{t+1}; f_t], f the
// target's last hidden state after its final norm, through fc (with bias) and one decoder
// layer without input norm, attending causally to the rows before it; its output o_t
// regresses f_{t+1} (SmoothL1) and, through the target's frozen LM head, matches the
// target's distribution at t+1 (soft cross-entropy, over the training vocabulary): loss =
// vloss + 0.1 ploss, both averaged over the rows. Noise goes on the input features only.
type Eagle1 struct {
	o      Eagle1Options
	target *weights.LlamaWeights
	ds     *Dataset
	H      int
	FC     *Param // [H, 2H]
	FCBias *Param // [H]
	L      *layer // in = H
	vocab  *trainVocab
	rng    *rand.Rand
}

// NewEagle1 makes a head for target t trained on d. fc starts as [N(0, 0.02^2) | identity]
// (g = f, so the head starts out predicting "the next feature is this one"), the layer
// from N(0, 0.02^2).
func NewEagle1(t *weights.LlamaWeights, d *Dataset, o Eagle1Options) (*Eagle1, error) {
	c := t.Cfg
	H := c.Dim
	if o.Hidden == 0 {
		o.Hidden = c.HiddenDim
	}
	if d.Dim != H {
		return nil, fmt.Errorf("distill: a dataset of width %d for a target of %d", d.Dim, H)
	}
	if c.NHeads*c.HeadDim != H {
		return nil, fmt.Errorf("distill: %w: heads*head_dim %d != hidden size %d", weights.ErrUnsupported, c.NHeads*c.HeadDim, H)
	}
	rng := rand.New(rand.NewSource(o.Seed))
	e := &Eagle1{o: o, target: t, ds: d, H: H, rng: rng}
	e.FC = newParam("fc", true, H, 2*H).fillNormal(rng, 0.02)
	for i := range H {
		e.FC.W[i*2*H+H+i] = 1
	}
	e.FCBias = newParam("fc.bias", false, H)
	rope := newRopeTable(c.HeadDim, c.MaxSeq+16, c.RopeTheta)
	e.L = newLayer("layers.0.", H, o.Hidden, H, c.NHeads, c.RMSEps, rope, rng)
	e.vocab = newTrainVocab(t.LMHead, c.Vocab, H, TokenMass(d, c.Vocab), o.Vocab)
	return e, nil
}

func (e *Eagle1) Params() []*Param {
	return append([]*Param{e.FC, e.FCBias}, e.L.params()...)
}

// features writes the normed last hidden states of positions lo..hi-1 into dst.
func (e *Eagle1) features(dst []float32, lo, hi int) {
	n := hi - lo
	e.ds.HiddenRows(dst, lo, hi)
	rmsNorm(dst[:n*e.H], dst[:n*e.H], e.target.Norm, nil, n, e.H, e.target.Cfg.RMSEps)
}

func (e *Eagle1) Step(seqs []int) StepStats {
	d, H := e.ds, e.H
	off := []int{0}
	for _, s := range seqs {
		off = append(off, off[len(off)-1]+d.SeqLen(s)-1)
	}
	R := off[len(off)-1]
	st := StepStats{Rows: R, Hits: make([]float64, 1), Cnt: make([]float64, 1)}
	cat := make([]float32, R*2*H)
	target := make([]float32, R*H)
	pos := make([]int, R)
	teach := make([]teacher, R)
	K := d.K
	tIDs, tProbs := make([]int32, R*K), make([]float32, R*K)
	var f []float32
	for i, s := range seqs {
		T := d.SeqLen(s)
		f = append(f[:0], make([]float32, T*H)...)
		e.features(f, d.Off[s], d.Off[s+1])
		for t := range T - 1 {
			r := off[i] + t
			pos[r] = t
			tok := int(d.Tokens[d.Off[s]+t+1])
			copy(cat[r*2*H:], e.target.Embed[tok*H:(tok+1)*H])
			for j, v := range f[t*H : (t+1)*H] {
				cat[r*2*H+H+j] = v + float32(e.o.Noise*(2*e.rng.Float64()-1))
			}
			copy(target[r*H:(r+1)*H], f[(t+1)*H:(t+2)*H])
			ids, probs := tIDs[r*K:(r+1)*K], tProbs[r*K:(r+1)*K]
			d.Teacher(d.Off[s]+t+1, ids, probs)
			teach[r] = e.vocab.teacher(ids, probs, 0.1/float32(R))
		}
	}
	g := make([]float32, R*H)
	linear(g, cat, e.FC.W, e.FCBias.W, R, H, 2*H)
	a := e.L.project(g, pos)
	e.L.finish(a, g, off, a.k, a.v, nil, nil)
	do := make([]float32, R*H)
	var vloss float64
	for r := range R {
		vloss += smoothL1(do[r*H:(r+1)*H], a.o[r*H:(r+1)*H], target[r*H:(r+1)*H], 1/float32(R))
	}
	st.Loss = vloss/float64(R) + e.vocab.loss(a.o, do, teach, &st, 0)
	dg := make([]float32, R*H)
	e.L.backFinish(a, do, dg, a.dk, a.dv, nil, nil)
	e.L.backProject(a, dg)
	linearBack(nil, e.FC.G, e.FCBias.G, dg, cat, e.FC.W, R, H, 2*H)
	return st
}

// headLoss is the soft cross-entropy of logits = x W^T (W [V, H] frozen, p its packing) for
// rows of x [R, H] against their teachers, adding its gradient into dx, in chunks of rows so
// that only a chunk of logits is ever held. Hits of rows with a teacher count into
// st.Hits[slot], st.Cnt[slot].
func headLoss(p *Packed, w, x, dx []float32, teach []teacher, st *StepStats, slot int) float64 {
	V, H := p.N, p.K
	R := len(x) / H
	const chunk = 512
	logits := make([]float32, chunk*V)
	var loss float64
	for lo := 0; lo < R; lo += chunk {
		n := min(chunk, R-lo)
		z := logits[:n*V]
		GemmPacked(n, x[lo*H:(lo+n)*H], p, z, false)
		for r := range n {
			if t := teach[lo+r]; t.w != 0 {
				st.Cnt[slot]++
				if argmax(z[r*V:(r+1)*V]) == int(t.ids[0]) {
					st.Hits[slot]++
				}
			}
		}
		loss += softCERows(z, n, V, teach[lo:lo+n])
		Gemm(false, false, n, H, V, z, w, dx[lo*H:(lo+n)*H], true)
	}
	return loss
}

// Export is the trained head as the EAGLE loader reads it (no embedding: the target's).
func (e *Eagle1) Export() *weights.Eagle {
	c := headConfig(e.target.Cfg, e.o.Hidden)
	w := &weights.Eagle{Kind: weights.EagleKind1, Cfg: c, TargetHidden: e.H, DraftVocab: c.Vocab}
	w.FC = append([]float32(nil), e.FC.W...)
	w.FCBias = append([]float32(nil), e.FCBias.W...)
	e.L.exportInto(w)
	return w
}
