package distill

import (
	"fmt"
	"slices"

	"github.com/wspec/wspec/weights"
)

// Llama runs a Llama-family model (the target, or a small draft model) on the CPU for
// inference, in float32 through Gemm, with a key/value cache per sequence. It computes what
// runtime/ref's LlamaState.Forward does (Hugging Face's LlamaForCausalLM, half-rotation
// RoPE), row by row, and also hands out the residual snapshots EAGLE heads read.
type Llama struct {
	W    *weights.LlamaWeights
	Cfg  weights.Config
	qkv  []*Packed   // per layer [q+2kv, dim]: q_proj, k_proj, v_proj stacked
	bqkv [][]float32 // per layer [q+2kv] or nil
	wo   []*Packed   // per layer o_proj
	w13  []*Packed   // per layer [2*hidden, dim]: gate_proj then up_proj
	w2   []*Packed   // per layer down_proj
	head *Packed     // the LM head
	rope *ropeTable
}

// NewLlama prepares w for the CPU forward pass (fused projections, a RoPE table of maxPos
// positions; maxPos 0 means the model's max_position_embeddings plus 16 for draft rows).
// Models with llama3 rope scaling or q/k norms are refused.
func NewLlama(w *weights.LlamaWeights, maxPos int) (*Llama, error) {
	c := w.Cfg
	if c.RopeScaling != nil {
		return nil, fmt.Errorf("distill: %w: rope_scaling in the CPU forward pass", weights.ErrUnsupported)
	}
	if c.QKNorm {
		return nil, fmt.Errorf("distill: %w: q/k norms (qwen3) in the CPU forward pass", weights.ErrUnsupported)
	}
	if c.NKVHeads < 1 || c.NHeads%c.NKVHeads != 0 {
		return nil, fmt.Errorf("distill: %d query heads do not share %d key/value heads evenly", c.NHeads, c.NKVHeads)
	}
	if maxPos == 0 {
		maxPos = c.MaxSeq + 16
	}
	m := &Llama{W: w, Cfg: c, rope: newRopeTable(c.HeadDim, maxPos, c.RopeTheta)}
	for _, ly := range w.Layers {
		q, kv := c.NHeads*c.HeadDim, c.NKVHeads*c.HeadDim
		m.qkv = append(m.qkv, PackWeight(slices.Concat(ly.Wq, ly.Wk, ly.Wv), q+2*kv, c.Dim))
		m.wo = append(m.wo, PackWeight(ly.Wo, c.Dim, q))
		m.w2 = append(m.w2, PackWeight(ly.WDown, c.Dim, c.HiddenDim))
		if ly.Bq != nil {
			m.bqkv = append(m.bqkv, slices.Concat(ly.Bq, ly.Bk, ly.Bv))
		} else {
			m.bqkv = append(m.bqkv, nil)
		}
		m.w13 = append(m.w13, PackWeight(slices.Concat(ly.WGate, ly.WUp), 2*c.HiddenDim, c.Dim))
	}
	m.head = PackWeight(w.LMHead, c.Vocab, c.Dim)
	return m, nil
}

// KVCache is one sequence's rotated keys and values, per layer [n, kv dim].
type KVCache struct {
	k, v [][]float32
	n    int
}

// NewCache is an empty sequence.
func (m *Llama) NewCache() *KVCache {
	return &KVCache{k: make([][]float32, m.Cfg.NLayers), v: make([][]float32, m.Cfg.NLayers)}
}

// Len is the number of cached positions.
func (c *KVCache) Len() int { return c.n }

// Truncate keeps the first n positions.
func (c *KVCache) Truncate(n int) {
	if n >= c.n {
		return
	}
	for l := range c.k {
		row := len(c.k[l]) / max(c.n, 1)
		c.k[l], c.v[l] = c.k[l][:n*row], c.v[l][:n*row]
	}
	c.n = n
}

// Row is one token fed to a sequence. Rows of one cache must be consecutive in a Forward,
// in order; each goes at the next position of its cache.
type Row struct {
	Cache *KVCache
	Token int
}

// Outputs are what a Forward computed for its M rows.
type Outputs struct {
	Logits []float32 // [M, vocab] (when asked for)
	Hidden []float32 // [M, dim]: the residual stream after the last layer, before the final norm
	Aux    []float32 // [M, len(aux), dim]: the residual stream entering each aux layer
}

// Forward appends the rows to their caches and runs them through the model together.
func (m *Llama) Forward(rows []Row, aux []int, wantLogits bool) (*Outputs, error) {
	c := m.Cfg
	M, dim, hd, nH, nKV := len(rows), c.Dim, c.HeadDim, c.NHeads, c.NKVHeads
	q, kv := nH*hd, nKV*hd
	qkvW := q + 2*kv // a row of the fused projection: q, then k, then v
	pos := make([]int, M)
	for r, row := range rows {
		pos[r] = row.Cache.n
		if r > 0 && rows[r-1].Cache == row.Cache {
			pos[r] = pos[r-1] + 1
		}
		if row.Token < 0 || row.Token >= c.Vocab {
			return nil, fmt.Errorf("distill: token %d outside the vocabulary of %d", row.Token, c.Vocab)
		}
		if pos[r] >= len(m.rope.cos)/m.rope.half {
			return nil, fmt.Errorf("distill: position %d past the %d the model was prepared for", pos[r], len(m.rope.cos)/m.rope.half)
		}
	}
	out := &Outputs{Aux: make([]float32, M*len(aux)*dim)}
	x := make([]float32, M*dim)
	for r, row := range rows {
		copy(x[r*dim:(r+1)*dim], m.W.Embed[row.Token*dim:])
	}
	h := make([]float32, M*dim)
	qkv := make([]float32, M*qkvW)
	qb, kb, vb := make([]float32, M*q), make([]float32, M*kv), make([]float32, M*kv)
	att := make([]float32, M*q)
	gu := make([]float32, M*2*c.HiddenDim)
	g, u, act := make([]float32, M*c.HiddenDim), make([]float32, M*c.HiddenDim), make([]float32, M*c.HiddenDim)
	for l, ly := range m.W.Layers {
		for i, a := range aux {
			if a == l {
				for r := range M {
					copy(out.Aux[(r*len(aux)+i)*dim:], x[r*dim:(r+1)*dim])
				}
			}
		}
		rmsNorm(h, x, ly.AttnNorm, nil, M, dim, c.RMSEps)
		GemmPacked(M, h, m.qkv[l], qkv, false)
		addBias(qkv, m.bqkv[l], M)
		for r := range M {
			copy(qb[r*q:], qkv[r*qkvW:r*qkvW+q])
			copy(kb[r*kv:], qkv[r*qkvW+q:r*qkvW+q+kv])
			copy(vb[r*kv:], qkv[r*qkvW+q+kv:(r+1)*qkvW])
		}
		m.rope.apply(qb, pos, nH, false)
		m.rope.apply(kb, pos, nKV, false)
		for r, row := range rows {
			kc := row.Cache
			kc.k[l] = append(kc.k[l][:pos[r]*kv], kb[r*kv:(r+1)*kv]...)
			kc.v[l] = append(kc.v[l][:pos[r]*kv], vb[r*kv:(r+1)*kv]...)
		}
		cachedAttention(att, qb, rows, pos, l, nH, nKV, hd)
		GemmPacked(M, att, m.wo[l], x, true)
		rmsNorm(h, x, ly.FFNNorm, nil, M, dim, c.RMSEps)
		GemmPacked(M, h, m.w13[l], gu, false)
		for r := range M {
			copy(g[r*c.HiddenDim:], gu[r*2*c.HiddenDim:r*2*c.HiddenDim+c.HiddenDim])
			copy(u[r*c.HiddenDim:], gu[r*2*c.HiddenDim+c.HiddenDim:(r+1)*2*c.HiddenDim])
		}
		swiglu(act, g, u)
		GemmPacked(M, act, m.w2[l], x, true)
	}
	for r, row := range rows {
		row.Cache.n = max(row.Cache.n, pos[r]+1)
	}
	out.Hidden = x
	if wantLogits {
		rmsNorm(h, x, m.W.Norm, nil, M, dim, c.RMSEps)
		out.Logits = make([]float32, M*c.Vocab)
		GemmPacked(M, h, m.head, out.Logits, false)
	}
	return out, nil
}

// cachedAttention is causal attention of each row's queries q [M, heads, hd] over layer l
// of its cache ([n, kvHeads, hd]; query head h reads key/value head h/(heads/kvHeads)),
// positions 0..pos[r], into att [M, heads, hd].
func cachedAttention(att, q []float32, rows []Row, pos []int, l, heads, kvHeads, hd int) {
	scale := 1 / float32(sqrt64(float64(hd)))
	kvRow, group := kvHeads*hd, heads/kvHeads
	parallelFor(len(rows)*heads, 4, func(lo, hi int) {
		var s []float32
		for i := lo; i < hi; i++ {
			r, h := i/heads, i%heads
			g := h / group // the key/value head
			kc, vc := rows[r].Cache.k[l], rows[r].Cache.v[l]
			n := pos[r] + 1
			s = slices.Grow(s[:0], n)[:n]
			qh := q[(r*heads+h)*hd : (r*heads+h+1)*hd]
			mx := float32(-1e30)
			for t := range n {
				s[t] = dot(qh, kc[t*kvRow+g*hd:t*kvRow+(g+1)*hd]) * scale
				mx = max(mx, s[t])
			}
			var sum float32
			for t := range n {
				s[t] = expf(s[t] - mx)
				sum += s[t]
			}
			o := att[(r*heads+h)*hd : (r*heads+h+1)*hd]
			clear(o)
			for t := range n {
				axpy(s[t]/sum, vc[t*kvRow+g*hd:t*kvRow+(g+1)*hd], o)
			}
		}
	})
}
