package distill

import "math/rand"

// layer is one trainable Llama decoder layer without its input norm (the callers differ in
// what feeds the attention: EAGLE-1 the fc output, EAGLE-3 [norm(embedding); norm(feature)],
// the draft model norm(x)). From an attention input u [R, in] and a residual base [R, H]:
//
//	q, k, v = u Wqkv^T, RoPE on q and k at each row's position
//	r = base + Wo attention(q, keys, values)
//	o = r + W2 (silu(n Wgate^T) * n Wup^T),  n = RMSNorm(r, PostNorm)
//
// The forward and backward passes come in two halves (project / finish) so that a caller
// can choose which keys and values the attention reads (EAGLE-3's training-time test).
type layer struct {
	H, I, in, heads, hd int
	eps                 float64
	rope                *ropeTable
	Wqkv                *Param // [3q, in]: q_proj, k_proj, v_proj stacked
	Wo                  *Param // [H, q]
	PostNorm            *Param // [H]
	W13                 *Param // [2I, H]: gate_proj then up_proj
	W2                  *Param // [H, I] down_proj
}

func newLayer(prefix string, H, I, in, heads int, eps float64, rope *ropeTable, rng *rand.Rand) *layer {
	q := H
	l := &layer{H: H, I: I, in: in, heads: heads, hd: H / heads, eps: eps, rope: rope,
		Wqkv:     newParam(prefix+"qkv", true, 3*q, in),
		Wo:       newParam(prefix+"o_proj", true, H, q),
		PostNorm: newParam(prefix+"post_attention_layernorm", false, H).fillConst(1),
		W13:      newParam(prefix+"gate_up", true, 2*I, H),
		W2:       newParam(prefix+"down_proj", true, H, I),
	}
	std := 0.02
	l.Wqkv.fillNormal(rng, std)
	l.Wo.fillNormal(rng, std)
	l.W13.fillNormal(rng, std)
	l.W2.fillNormal(rng, std)
	return l
}

func (l *layer) params() []*Param { return []*Param{l.Wqkv, l.Wo, l.PostNorm, l.W13, l.W2} }

// layerAct is one application of the layer to R rows: what the backward pass reads.
type layerAct struct {
	R             int
	u             []float32 // [R, in]
	pos           []int
	q, k, v       []float32 // [R, H] (q, k rotated)
	ac            *attnCache
	att, r, n, rs []float32
	gate, up, h   []float32 // [R, I]
	o             []float32 // [R, H]
	dq, dk, dv    []float32 // gradients of q, k, v (rotated), filled by the backward pass
}

// project computes q, k, v for the rows of u at positions pos.
func (l *layer) project(u []float32, pos []int) *layerAct {
	R, H := len(pos), l.H
	a := &layerAct{R: R, u: u, pos: pos, q: make([]float32, R*H), k: make([]float32, R*H), v: make([]float32, R*H)}
	qkv := make([]float32, R*3*H)
	linear(qkv, u, l.Wqkv.W, nil, R, 3*H, l.in)
	for r := range R {
		copy(a.q[r*H:(r+1)*H], qkv[r*3*H:])
		copy(a.k[r*H:(r+1)*H], qkv[r*3*H+H:])
		copy(a.v[r*H:(r+1)*H], qkv[r*3*H+2*H:])
	}
	l.rope.apply(a.q, pos, l.heads, false)
	l.rope.apply(a.k, pos, l.heads, false)
	a.dq, a.dk, a.dv = make([]float32, R*H), make([]float32, R*H), make([]float32, R*H)
	return a
}

// finish runs the attention of a's queries over k0/v0 (causal within each sequence of off)
// and the chain ck/cv, then the rest of the layer on the residual base, into a.o.
func (l *layer) finish(a *layerAct, base []float32, off []int, k0, v0 []float32, ck, cv [][]float32) {
	R, H, I := a.R, l.H, l.I
	a.att = make([]float32, R*H)
	a.ac = attnForward(a.att, a.q, k0, v0, ck, cv, off, l.heads, l.hd)
	a.r = append([]float32(nil), base...)
	Gemm(false, true, R, H, H, a.att, l.Wo.W, a.r, true)
	a.n, a.rs = make([]float32, R*H), make([]float32, R)
	rmsNorm(a.n, a.r, l.PostNorm.W, a.rs, R, H, l.eps)
	gu := make([]float32, R*2*I)
	linear(gu, a.n, l.W13.W, nil, R, 2*I, H)
	a.gate, a.up, a.h = make([]float32, R*I), make([]float32, R*I), make([]float32, R*I)
	for r := range R {
		copy(a.gate[r*I:(r+1)*I], gu[r*2*I:])
		copy(a.up[r*I:(r+1)*I], gu[r*2*I+I:])
	}
	swiglu(a.h, a.gate, a.up)
	a.o = append([]float32(nil), a.r...)
	Gemm(false, true, R, H, I, a.h, l.W2.W, a.o, true)
}

// backFinish takes do [R, H], the gradient of a.o, back to the residual base (added into
// dbase), to a.dq, and into the gradients of the keys and values the attention read.
func (l *layer) backFinish(a *layerAct, do, dbase []float32, dk0, dv0 []float32, dck, dcv [][]float32) {
	R, H, I := a.R, l.H, l.I
	dh := make([]float32, R*I)
	linearBack(dh, l.W2.G, nil, do, a.h, l.W2.W, R, H, I)
	dgate, dup := make([]float32, R*I), make([]float32, R*I)
	swigluBack(dgate, dup, dh, a.gate, a.up)
	dgu := make([]float32, R*2*I)
	for r := range R {
		copy(dgu[r*2*I:], dgate[r*I:(r+1)*I])
		copy(dgu[r*2*I+I:], dup[r*I:(r+1)*I])
	}
	dn := make([]float32, R*H)
	linearBack(dn, l.W13.G, nil, dgu, a.n, l.W13.W, R, 2*I, H)
	dr := append([]float32(nil), do...)
	rmsNormBack(dr, l.PostNorm.G, dn, a.r, l.PostNorm.W, a.rs, R, H)
	for i, v := range dr {
		dbase[i] += v
	}
	datt := make([]float32, R*H)
	linearBack(datt, l.Wo.G, nil, dr, a.att, l.Wo.W, R, H, H)
	attnBackward(a.ac, datt, a.dq, dk0, dv0, dck, dcv)
}

// backProject takes a.dq, a.dk, a.dv (complete: every query that read this application's
// keys and values has been through backFinish) back to du [R, in] (added into; nil: the
// input needs no gradient) and the projection's weights.
func (l *layer) backProject(a *layerAct, du []float32) {
	R, H := a.R, l.H
	l.rope.apply(a.dq, a.pos, l.heads, true)
	l.rope.apply(a.dk, a.pos, l.heads, true)
	dqkv := make([]float32, R*3*H)
	for r := range R {
		copy(dqkv[r*3*H:], a.dq[r*H:(r+1)*H])
		copy(dqkv[r*3*H+H:], a.dk[r*H:(r+1)*H])
		copy(dqkv[r*3*H+2*H:], a.dv[r*H:(r+1)*H])
	}
	linearBack(du, l.Wqkv.G, nil, dqkv, a.u, l.Wqkv.W, R, 3*H, l.in)
}
