package ref

import (
	"fmt"
	"math"
	"math/rand"
	"slices"

	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/weights"
)

// EagleState is one sequence of an EAGLE-1 or EAGLE-3 drafter head (weights.Eagle) with its
// own key/value cache: row r of a Forward is the draft row of position n+r (n = Len()),
// taking the token that follows that position and the feature of that position.
type EagleState struct {
	w       *weights.Eagle
	embed   []float32 // [V, H]: the head's own, else the target's
	lmHead  []float32 // [V, H] the target's (EAGLE-1) or [Vd, H] the head's (EAGLE-3)
	invFreq []float64
	k, v    []float32 // [T, nKV, hd]
	n       int
}

// NewEagleState starts an empty draft sequence for head w on target tw (whose embedding
// serves when w has none, and whose LM head EAGLE-1 uses).
func NewEagleState(w *weights.Eagle, tw *weights.LlamaWeights) *EagleState {
	c := w.Cfg
	s := &EagleState{w: w, embed: w.Embed, lmHead: w.LMHead, invFreq: kernelref.RopeInvFreq(c.HeadDim, c.RopeTheta, c.RopeScaling)}
	if s.embed == nil {
		s.embed = tw.Embed
	}
	if w.Kind == weights.EagleKind1 {
		s.lmHead = tw.LMHead
	}
	return s
}

// Len is the number of rows in the head's cache.
func (s *EagleState) Len() int { return s.n }

// Truncate drops the cached rows from n on.
func (s *EagleState) Truncate(n int) {
	if n < 0 || n > s.n {
		panic(fmt.Sprintf("ref.EagleState.Truncate: %d outside a cache of %d", n, s.n))
	}
	row := s.w.Cfg.NKVHeads * s.w.Cfg.HeadDim
	s.k, s.v, s.n = s.k[:n*row], s.v[:n*row], n
}

// Forward runs M = len(tokens) draft rows at positions n..n+M-1 and appends them to the
// cache. feats is [M, width]: EAGLE-1, width H, the target's last hidden state after its
// final norm (or the head's previous output); EAGLE-3, width 3Ht, the target residuals
// entering the aux layers (through fc), or width H, the head's previous output (fc skipped).
//
//	EAGLE-1: g = fc([E x; f]) + b;  a = g + Wo Attn(Wq g, Wk g, Wv g);  logits = LMHead_target(o)
//	EAGLE-3: g = fc(f) (width != H);  u = [RMSNorm_in(E x); RMSNorm_hidden(g)]
//	         a = g + Wo Attn(Wq u, Wk u, Wv u);  logits = LMHead(RMSNorm_norm(o))  [Vd]
//	both:    o = a + down(silu(gate(n)) * up(n)),  n = RMSNorm_post(a)
//
// It returns logits [M, V or Vd] and o [M, H] (the next depth's feature).
func (s *EagleState) Forward(tokens []int, feats []float32, width int) (logits, out []float32) {
	w, c := s.w, s.w.Cfg
	M, H, hd := len(tokens), c.Dim, c.HeadDim
	nH, nKV := c.NHeads, c.NKVHeads
	if len(feats) != M*width {
		panic(fmt.Sprintf("ref: EagleState.Forward feats has %d values, want %d", len(feats), M*width))
	}
	eps := c.RMSEps
	e := kernelref.Embed(s.embed, tokens, H) // [M, H]
	var g, u []float32                       // [M, H], [M, in]
	in := H
	if w.Kind == weights.EagleKind1 {
		if width != H {
			panic(fmt.Sprintf("ref.EagleState.Forward: EAGLE-1 feature width %d, want %d", width, H))
		}
		cat := make([]float32, 0, M*2*H)
		for m := range M {
			cat = append(append(cat, e[m*H:(m+1)*H]...), feats[m*H:(m+1)*H]...)
		}
		g = kernelref.MatMul(cat, w.FC, w.FCBias, nil, M, H, 2*H)
		u = g
	} else {
		g = feats
		if width != H {
			g = kernelref.MatMul(feats, w.FC, nil, nil, M, H, width)
		}
		in = 2 * H
		en, gn := kernelref.RMSNorm(e, w.InputNorm, M, H, eps), kernelref.RMSNorm(g, w.HidNorm, M, H, eps)
		u = make([]float32, 0, M*in)
		for m := range M {
			u = append(append(u, en[m*H:(m+1)*H]...), gn[m*H:(m+1)*H]...)
		}
	}
	pos := make([]int, M)
	for m := range pos {
		pos[m] = s.n + m
	}
	qm := kernelref.MatMul(u, w.Wq, nil, nil, M, nH*hd, in)
	km := kernelref.MatMul(u, w.Wk, nil, nil, M, nKV*hd, in)
	vm := kernelref.MatMul(u, w.Wv, nil, nil, M, nKV*hd, in)
	kernelref.Rope(qm, pos, M, nH, hd, s.invFreq)
	kernelref.Rope(km, pos, M, nKV, hd, s.invFreq)
	s.k, s.v = append(s.k, km...), append(s.v, vm...)
	s.n += M
	att := kernelref.Attention(qm, s.k, s.v, pos, M, s.n, nH, nKV, hd)
	a := kernelref.MatMul(att, w.Wo, nil, g, M, H, nH*hd)
	n := kernelref.RMSNorm(a, w.PostNorm, M, H, eps)
	gate := kernelref.MatMul(n, w.WGate, nil, nil, M, c.HiddenDim, H)
	up := kernelref.MatMul(n, w.WUp, nil, nil, M, c.HiddenDim, H)
	out = kernelref.MatMul(kernelref.SwiGLU(gate, up), w.WDown, nil, a, M, H, c.HiddenDim)
	x := out
	if w.Kind == weights.EagleKind3 {
		x = kernelref.RMSNorm(out, w.Norm, M, H, eps)
	}
	rows := len(s.lmHead) / H
	return kernelref.MatMul(x, s.lmHead, nil, nil, M, rows, H), out
}

// Token is the target id of the argmax of a logits row (through d2t for EAGLE-3).
func (s *EagleState) Token(row []float32) int {
	id := kernelref.Argmax(row)
	if s.w.D2T != nil {
		id += int(s.w.D2T[id])
	}
	return id
}

// Draft runs the catch-up rows (tokens, feats of width as in Forward), which stay in the
// cache, then drafts k tokens greedily: the last row's argmax, then k-1 more depths, each
// fed the previous depth's token and output. The depths' rows are dropped from the cache
// afterwards.
func (s *EagleState) Draft(tokens []int, feats []float32, width, k int) []int {
	logits, out := s.Forward(tokens, feats, width)
	rows, H := len(tokens), s.w.Cfg.Dim
	V := len(logits) / rows
	drafts := []int{s.Token(logits[(rows-1)*V:])}
	feat := slices.Clone(out[(rows-1)*H:])
	keep := s.n
	for len(drafts) < k {
		logits, feat = s.Forward(drafts[len(drafts)-1:], feat, H)
		drafts = append(drafts, s.Token(logits))
	}
	s.Truncate(keep)
	return drafts
}

// EagleFeatures are the target features an EAGLE head reads for the rows of one target
// Forward (tokens, hidden as LlamaState.Forward returns them): with aux nil, EAGLE-1's last
// hidden state after the final norm [M, dim]; else, EAGLE-3's residual stream entering each
// aux layer, side by side [M, len(aux)*dim].
func EagleFeatures(tw *weights.LlamaWeights, tokens []int, hidden [][]float32, aux []int) []float32 {
	c := tw.Cfg
	M, dim := len(tokens), c.Dim
	if aux == nil {
		return kernelref.RMSNorm(hidden[c.NLayers-1], tw.Norm, M, dim, c.RMSEps)
	}
	emb := kernelref.Embed(tw.Embed, tokens, dim)
	out := make([]float32, 0, M*len(aux)*dim)
	for m := range M {
		for _, l := range aux {
			src := emb
			if l > 0 {
				src = hidden[l-1]
			}
			out = append(out, src[m*dim:(m+1)*dim]...)
		}
	}
	return out
}

// RandomEagle returns a head of kind for a target of config t, with layer config c (Dim H,
// heads, HiddenDim; Vocab is set to the target's) and draft vocabulary vd (EAGLE-3; 0 means
// the target's, with no d2t), filled like RandomLlama: linear weights ~ N(0, 1/in), norms
// ~ 1 + N(0, 0.1^2), the fc bias ~ N(0, 0.1^2), an own embedding only when H differs from
// the target's, and d2t mapping draft id i to a sorted random subset of the target's ids.
func RandomEagle(kind string, c weights.Config, t weights.Config, vd int, seed int64) *weights.Eagle {
	rng := rand.New(rand.NewSource(seed))
	normal := func(n int, mean, std float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(mean + std*rng.NormFloat64())
		}
		return x
	}
	linear := func(out, in int) []float32 { return normal(out*in, 0, 1/math.Sqrt(float64(in))) }
	c.NLayers, c.Vocab = 1, t.Vocab
	H, I := c.Dim, c.HiddenDim
	q, kv := c.NHeads*c.HeadDim, c.NKVHeads*c.HeadDim
	e := &weights.Eagle{Kind: kind, Cfg: c, TargetHidden: t.Dim, DraftVocab: c.Vocab}
	in := H
	if kind == weights.EagleKind1 {
		e.TargetHidden = H
		e.FC, e.FCBias = linear(H, 2*H), normal(H, 0, 0.1)
	} else {
		in = 2 * H
		if vd > 0 {
			e.DraftVocab = vd
			used := rng.Perm(c.Vocab)[:vd]
			slices.Sort(used)
			e.D2T = make([]int64, vd)
			for i, u := range used {
				e.D2T[i] = int64(u - i)
			}
		}
		e.FC = linear(H, 3*t.Dim)
		e.InputNorm, e.HidNorm, e.Norm = normal(H, 1, 0.1), normal(H, 1, 0.1), normal(H, 1, 0.1)
		e.LMHead = normal(e.DraftVocab*H, 0, 2/math.Sqrt(float64(H)))
	}
	if H != t.Dim {
		e.Embed = normal(c.Vocab*H, 0, 2/math.Sqrt(float64(H)))
	}
	e.Wq, e.Wk, e.Wv, e.Wo = linear(q, in), linear(kv, in), linear(kv, in), linear(H, q)
	e.WGate, e.WUp, e.WDown = linear(I, H), linear(I, H), linear(H, I)
	e.PostNorm = normal(H, 1, 0.1)
	return e
}
