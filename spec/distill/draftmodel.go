package distill

import (
	"fmt"
	"math"
	"math/rand"
	"slices"

	"github.com/wspec/wspec/weights"
)

// DraftOptions size a small draft model.
type DraftOptions struct {
	Layers, Dim, Hidden, Heads int
	Seed                       int64
}

// DraftModel trains a small Llama with the target's vocabulary and tokenizer (tied
// embedding) by distillation: at every position its next-token distribution is pulled to
// the target's (soft cross-entropy = forward KL up to the target's entropy, top-K truncated),
// averaged over the positions.
type DraftModel struct {
	Cfg      weights.Config
	target   *weights.LlamaWeights
	ds       *Dataset
	Embed    *Param // [V, D], also the LM head
	AttnNorm []*Param
	L        []*layer
	Norm     *Param
}

// NewDraftModel makes a draft model for target t trained on d. The embedding starts as the
// target's projected onto its top Dim principal directions (so token geometry carries
// over); the layers from N(0, 0.02^2), the output projections scaled by 1/sqrt(2 layers).
func NewDraftModel(t *weights.LlamaWeights, d *Dataset, o DraftOptions) (*DraftModel, error) {
	tc := t.Cfg
	if o.Layers < 1 || o.Dim < 8 || o.Heads < 1 || o.Dim%o.Heads != 0 || (o.Dim/o.Heads)%2 != 0 || o.Hidden < 1 {
		return nil, fmt.Errorf("distill: draft model of %d layers, dim %d, %d heads, hidden %d", o.Layers, o.Dim, o.Heads, o.Hidden)
	}
	if o.Dim > tc.Dim {
		return nil, fmt.Errorf("distill: a draft model wider (%d) than its target (%d)", o.Dim, tc.Dim)
	}
	c := weights.Config{Arch: "llama", Dim: o.Dim, HiddenDim: o.Hidden, NLayers: o.Layers, NHeads: o.Heads, NKVHeads: o.Heads,
		HeadDim: o.Dim / o.Heads, Vocab: tc.Vocab, MaxSeq: tc.MaxSeq, RopeTheta: 10000, RMSEps: tc.RMSEps, TieEmbed: true,
		BOS: tc.BOS, EOS: slices.Clone(tc.EOS)}
	rng := rand.New(rand.NewSource(o.Seed))
	m := &DraftModel{Cfg: c, target: t, ds: d}
	m.Embed = newParam("model.embed_tokens.weight", true, c.Vocab, c.Dim)
	copy(m.Embed.W, pcaProject(t.Embed, tc.Vocab, tc.Dim, c.Dim))
	rope := newRopeTable(c.HeadDim, c.MaxSeq+16, c.RopeTheta)
	for i := range o.Layers {
		pre := fmt.Sprintf("model.layers.%d.", i)
		m.AttnNorm = append(m.AttnNorm, newParam(pre+"input_layernorm.weight", false, c.Dim).fillConst(1))
		l := newLayer(pre, c.Dim, c.HiddenDim, c.Dim, c.NHeads, c.RMSEps, rope, rng)
		l.Wo.fillNormal(rng, 0.02/math.Sqrt(2*float64(o.Layers)))
		l.W2.fillNormal(rng, 0.02/math.Sqrt(2*float64(o.Layers)))
		m.L = append(m.L, l)
	}
	m.Norm = newParam("model.norm.weight", false, c.Dim).fillConst(1)
	return m, nil
}

func (m *DraftModel) Params() []*Param {
	ps := []*Param{m.Embed, m.Norm}
	for i, l := range m.L {
		ps = append(append(ps, m.AttnNorm[i]), l.params()...)
	}
	return ps
}

func (m *DraftModel) Step(seqs []int) StepStats {
	d, D := m.ds, m.Cfg.Dim
	off := []int{0}
	for _, s := range seqs {
		off = append(off, off[len(off)-1]+d.SeqLen(s))
	}
	R := off[len(off)-1]
	st := StepStats{Rows: R, Hits: make([]float64, 1), Cnt: make([]float64, 1)}
	toks, pos := make([]int, R), make([]int, R)
	K := d.K
	tIDs, tProbs := make([]int32, R*K), make([]float32, R*K)
	teach := make([]teacher, R)
	for i, s := range seqs {
		for t := range d.SeqLen(s) {
			r, p := off[i]+t, d.Off[s]+t
			toks[r], pos[r] = int(d.Tokens[p]), t
			ids, probs := tIDs[r*K:(r+1)*K], tProbs[r*K:(r+1)*K]
			d.Teacher(p, ids, probs)
			teach[r] = teacher{ids: ids, probs: probs, w: 1 / float32(R)}
		}
	}
	x := make([]float32, R*D)
	for r, tok := range toks {
		copy(x[r*D:(r+1)*D], m.Embed.W[tok*D:])
	}
	type lact struct {
		in, a, rs []float32
		act       *layerAct
	}
	acts := make([]lact, len(m.L))
	for i, l := range m.L {
		la := lact{in: x, a: make([]float32, R*D), rs: make([]float32, R)}
		rmsNorm(la.a, x, m.AttnNorm[i].W, la.rs, R, D, m.Cfg.RMSEps)
		la.act = l.project(la.a, pos)
		l.finish(la.act, x, off, la.act.k, la.act.v, nil, nil)
		x = la.act.o
		acts[i] = la
	}
	xn, rs := make([]float32, R*D), make([]float32, R)
	rmsNorm(xn, x, m.Norm.W, rs, R, D, m.Cfg.RMSEps)
	dxn := make([]float32, R*D)
	st.Loss = tiedHeadLoss(m.Embed, xn, dxn, teach, &st)
	dx := make([]float32, R*D)
	rmsNormBack(dx, m.Norm.G, dxn, x, m.Norm.W, rs, R, D)
	for i := len(m.L) - 1; i >= 0; i-- {
		la, l := acts[i], m.L[i]
		dbase := make([]float32, R*D)
		l.backFinish(la.act, dx, dbase, la.act.dk, la.act.dv, nil, nil)
		da := make([]float32, R*D)
		l.backProject(la.act, da)
		rmsNormBack(dbase, m.AttnNorm[i].G, da, la.in, m.AttnNorm[i].W, la.rs, R, D)
		dx = dbase
	}
	for r, tok := range toks {
		axpy(1, dx[r*D:(r+1)*D], m.Embed.G[tok*D:(tok+1)*D])
	}
	return st
}

// tiedHeadLoss is headLoss for a trainable LM head w [V, D]: it also adds the gradient of
// the head's weights into w.G.
func tiedHeadLoss(w *Param, x, dx []float32, teach []teacher, st *StepStats) float64 {
	V, D := w.Shape[0], w.Shape[1]
	R := len(x) / D
	const chunk = 512
	logits := make([]float32, chunk*V)
	p := PackWeight(w.W, V, D)
	var loss float64
	for lo := 0; lo < R; lo += chunk {
		n := min(chunk, R-lo)
		z := logits[:n*V]
		xc := x[lo*D : (lo+n)*D]
		GemmPacked(n, xc, p, z, false)
		for r := range n {
			if t := teach[lo+r]; t.w != 0 {
				st.Cnt[0]++
				if argmax(z[r*V:(r+1)*V]) == int(t.ids[0]) {
					st.Hits[0]++
				}
			}
		}
		loss += softCERows(z, n, V, teach[lo:lo+n])
		Gemm(false, false, n, D, V, z, w.W, dx[lo*D:(lo+n)*D], true)
		Gemm(true, false, V, D, n, z, xc, w.G, true)
	}
	return loss
}

// Export is the trained model as weights.LlamaWeights (tied: LMHead is Embed).
func (m *DraftModel) Export() *weights.LlamaWeights {
	w := &weights.LlamaWeights{Cfg: m.Cfg, Embed: slices.Clone(m.Embed.W), Norm: slices.Clone(m.Norm.W)}
	w.LMHead = w.Embed
	for i, l := range m.L {
		var e weights.Eagle
		l.exportInto(&e)
		w.Layers = append(w.Layers, weights.LlamaLayer{AttnNorm: slices.Clone(m.AttnNorm[i].W), Wq: e.Wq, Wk: e.Wk, Wv: e.Wv, Wo: e.Wo,
			FFNNorm: e.PostNorm, WGate: e.WGate, WUp: e.WUp, WDown: e.WDown})
	}
	return w
}

// pcaProject returns e [V, H] projected onto the D eigenvectors of e^T e with the largest
// eigenvalues ([V, D]): the D-dimensional embedding whose dot products best keep e's.
func pcaProject(e []float32, V, H, D int) []float32 {
	cov32 := make([]float32, H*H)
	Gemm(true, false, H, H, V, e, e, cov32, false)
	cov := make([]float64, H*H)
	for i, v := range cov32 {
		cov[i] = float64(v)
	}
	vals, vecs := jacobiEigen(cov, H)
	order := make([]int, H)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return -cmpF(vals[a], vals[b]) })
	proj := make([]float32, D*H) // [D, H]: the top eigenvectors as rows
	for k := range D {
		for i := range H {
			proj[k*H+i] = float32(vecs[i*H+order[k]])
		}
	}
	out := make([]float32, V*D)
	Gemm(false, true, V, D, H, e, proj, out, false)
	return out
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// jacobiEigen diagonalises the symmetric matrix a [n, n] (destroyed) by cyclic Jacobi
// rotations; it returns the eigenvalues and the eigenvectors as the columns of v [n, n].
func jacobiEigen(a []float64, n int) ([]float64, []float64) {
	v := make([]float64, n*n)
	for i := range n {
		v[i*n+i] = 1
	}
	for sweep := 0; sweep < 50; sweep++ {
		var off float64
		for p := range n {
			for q := p + 1; q < n; q++ {
				off += a[p*n+q] * a[p*n+q]
			}
		}
		if off < 1e-22 {
			break
		}
		for p := range n {
			for q := p + 1; q < n; q++ {
				apq := a[p*n+q]
				if math.Abs(apq) < 1e-300 {
					continue
				}
				theta := (a[q*n+q] - a[p*n+p]) / (2 * apq)
				t := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				c := 1 / math.Sqrt(t*t+1)
				s := t * c
				for k := range n {
					akp, akq := a[k*n+p], a[k*n+q]
					a[k*n+p], a[k*n+q] = c*akp-s*akq, s*akp+c*akq
				}
				for k := range n {
					apk, aqk := a[p*n+k], a[q*n+k]
					a[p*n+k], a[q*n+k] = c*apk-s*aqk, s*apk+c*aqk
				}
				for k := range n {
					vkp, vkq := v[k*n+p], v[k*n+q]
					v[k*n+p], v[k*n+q] = c*vkp-s*vkq, s*vkp+c*vkq
				}
			}
		}
	}
	vals := make([]float64, n)
	for i := range n {
		vals[i] = a[i*n+i]
	}
	return vals, v
}
