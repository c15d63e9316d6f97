package distill

import (
	"fmt"
	"slices"

	"github.com/wspec/wspec/weights"
)

// EagleHead runs an EAGLE-1 or EAGLE-3 head (weights.Eagle, as the loaders read it) on the
// CPU, as runtime/model's Eagle does on the device and runtime/ref's EagleState in float64:
//
//	EAGLE-1: g = fc([E x; f]) + b;  a = g + Wo Attn(Wq g, Wk g, Wv g);  logits = LMHead_target(o)
//	EAGLE-3: g = fc(f) (width != H);  u = [RMSNorm_in(E x); RMSNorm_hidden(g)]
//	         a = g + Wo Attn(Wq u, Wk u, Wv u);  logits = LMHead(RMSNorm_norm(o))  [Vd]
//	both:    o = a + down(silu(gate(n)) * up(n)),  n = RMSNorm_post(a)
type EagleHead struct {
	W                *weights.Eagle
	embed            []float32
	head             *Packed // [V or Vd, H]
	fc, qkv, wo, w13 *Packed
	w2               *Packed
	rope             *ropeTable
}

// NewEagleHead prepares head w to run next to target t (whose embedding serves when w has
// none, and whose LM head EAGLE-1 uses).
func NewEagleHead(w *weights.Eagle, t *Llama) (*EagleHead, error) {
	if err := w.CheckTarget(&t.Cfg); err != nil {
		return nil, err
	}
	c := w.Cfg
	H, I := c.Dim, c.HiddenDim
	q, kv := c.NHeads*c.HeadDim, c.NKVHeads*c.HeadDim
	if c.NHeads != c.NKVHeads {
		return nil, fmt.Errorf("distill: %w: grouped-query attention in an EAGLE head", weights.ErrUnsupported)
	}
	in := H
	if w.Kind == weights.EagleKind3 {
		in = 2 * H
	}
	h := &EagleHead{W: w, embed: w.Embed, head: t.head, rope: newRopeTable(c.HeadDim, t.Cfg.MaxSeq+32, c.RopeTheta)}
	if h.embed == nil {
		h.embed = t.W.Embed
	}
	h.qkv = PackWeight(slices.Concat(w.Wq, w.Wk, w.Wv), q+2*kv, in)
	h.wo = PackWeight(w.Wo, H, q)
	h.w13 = PackWeight(slices.Concat(w.WGate, w.WUp), 2*I, H)
	h.w2 = PackWeight(w.WDown, H, I)
	switch {
	case w.Kind == weights.EagleKind1:
		h.fc = PackWeight(w.FC, H, 2*H)
	case w.FC != nil:
		h.fc = PackWeight(w.FC, H, 3*w.TargetHidden)
	}
	if w.Kind == weights.EagleKind3 {
		h.head = PackWeight(w.LMHead, w.DraftVocab, H)
	}
	return h, nil
}

// EagleState is one sequence of a head: its key/value cache.
type EagleState struct {
	h     *EagleHead
	cache *KVCache
}

// NewState starts an empty draft sequence.
func (h *EagleHead) NewState() *EagleState {
	return &EagleState{h: h, cache: &KVCache{k: make([][]float32, 1), v: make([][]float32, 1)}}
}

// Len is the number of cached rows; Truncate keeps the first n.
func (s *EagleState) Len() int       { return s.cache.n }
func (s *EagleState) Truncate(n int) { s.cache.Truncate(n) }

// Forward runs len(tokens) draft rows at the next positions (feats [M, width] as in
// ref.EagleState.Forward) and returns logits [M, V or Vd] and the outputs o [M, H].
func (s *EagleState) Forward(tokens []int, feats []float32, width int) (logits, out []float32) {
	h, w, c := s.h, s.h.W, s.h.W.Cfg
	M, H, I := len(tokens), c.Dim, c.HiddenDim
	q := c.NHeads * c.HeadDim
	e := make([]float32, M*H)
	for m, tok := range tokens {
		copy(e[m*H:(m+1)*H], h.embed[tok*H:])
	}
	var g, u []float32
	in := H
	if w.Kind == weights.EagleKind1 {
		cat := make([]float32, 0, M*2*H)
		for m := range M {
			cat = append(append(cat, e[m*H:(m+1)*H]...), feats[m*H:(m+1)*H]...)
		}
		g = make([]float32, M*H)
		GemmPacked(M, cat, h.fc, g, false)
		addBias(g, w.FCBias, M)
		u = g
	} else {
		g = feats
		if width != H {
			g = make([]float32, M*H)
			GemmPacked(M, feats, h.fc, g, false)
		}
		in = 2 * H
		en, gn := make([]float32, M*H), make([]float32, M*H)
		rmsNorm(en, e, w.InputNorm, nil, M, H, c.RMSEps)
		rmsNorm(gn, g, w.HidNorm, nil, M, H, c.RMSEps)
		u = make([]float32, 0, M*in)
		for m := range M {
			u = append(append(u, en[m*H:(m+1)*H]...), gn[m*H:(m+1)*H]...)
		}
	}
	qkv := make([]float32, M*3*q)
	GemmPacked(M, u, h.qkv, qkv, false)
	qb, kb, vb := make([]float32, M*q), make([]float32, M*q), make([]float32, M*q)
	for m := range M {
		copy(qb[m*q:], qkv[m*3*q:m*3*q+q])
		copy(kb[m*q:], qkv[m*3*q+q:m*3*q+2*q])
		copy(vb[m*q:], qkv[m*3*q+2*q:(m+1)*3*q])
	}
	pos := make([]int, M)
	rows := make([]Row, M)
	for m := range pos {
		pos[m] = s.cache.n + m
		rows[m] = Row{Cache: s.cache}
	}
	h.rope.apply(qb, pos, c.NHeads, false)
	h.rope.apply(kb, pos, c.NHeads, false)
	s.cache.k[0] = append(s.cache.k[0][:s.cache.n*q], kb...)
	s.cache.v[0] = append(s.cache.v[0][:s.cache.n*q], vb...)
	att := make([]float32, M*q)
	cachedAttention(att, qb, rows, pos, 0, c.NHeads, c.NHeads, c.HeadDim)
	s.cache.n += M
	a := append([]float32(nil), g...)
	GemmPacked(M, att, h.wo, a, true)
	n := make([]float32, M*H)
	rmsNorm(n, a, w.PostNorm, nil, M, H, c.RMSEps)
	gu := make([]float32, M*2*I)
	GemmPacked(M, n, h.w13, gu, false)
	act := make([]float32, M*I)
	for m := range M {
		swiglu(act[m*I:(m+1)*I], gu[m*2*I:m*2*I+I], gu[m*2*I+I:(m+1)*2*I])
	}
	out = a
	GemmPacked(M, act, h.w2, out, true)
	x := out
	if w.Kind == weights.EagleKind3 {
		x = make([]float32, M*H)
		rmsNorm(x, out, w.Norm, nil, M, H, c.RMSEps)
	}
	logits = make([]float32, M*h.head.N)
	GemmPacked(M, x, h.head, logits, false)
	return logits, out
}

// Token is the target id of the argmax of a logits row (through d2t for EAGLE-3).
func (s *EagleState) Token(row []float32) int {
	id := argmax(row)
	if s.h.W.D2T != nil {
		id += int(s.h.W.D2T[id])
	}
	return id
}

// Draft runs the catch-up rows (which stay in the cache), then drafts k tokens greedily:
// the last row's argmax, then k-1 more depths, each fed the previous depth's token and
// output; the depths' rows are dropped afterwards (ref.EagleState.Draft).
func (s *EagleState) Draft(tokens []int, feats []float32, width, k int) []int {
	logits, out := s.Forward(tokens, feats, width)
	rows, H := len(tokens), s.h.W.Cfg.Dim
	V := len(logits) / rows
	drafts := []int{s.Token(logits[(rows-1)*V:])}
	feat := slices.Clone(out[(rows-1)*H:])
	keep := s.Len()
	for len(drafts) < k {
		logits, feat = s.Forward(drafts[len(drafts)-1:], feat, H)
		drafts = append(drafts, s.Token(logits))
	}
	s.Truncate(keep)
	return drafts
}
