// Package ref is the reference model: the Llama forward pass, a model's batched step
// (Model, the scheduler's device-free target) and the drafter heads (EAGLE, Medusa), in pure
// Go over runtime/kernelref's kernels. Tests check the device model and the drafters against
// it; nothing in the wspec binary imports it.
package ref

import (
	"math"
	"math/rand"
	"slices"

	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/weights"
)

// RandomLlama returns weights of shape cfg filled from a seeded normal generator, for
// tests: linear weights ~ N(0, 1/in) (so activations stay O(1) through the layers),
// biases ~ N(0, 0.1^2), RMSNorm weights ~ 1 + N(0, 0.1^2), and embeddings ~ N(0, 4/dim)
// (so that a tied LM head still gives logits of standard deviation about 2: neither
// uniform nor one-hot). An untied LM head is ~ N(0, 4/dim) too.
func RandomLlama(cfg weights.Config, seed int64) *weights.LlamaWeights {
	if cfg.HeadDim == 0 {
		cfg.HeadDim = cfg.Dim / cfg.NHeads
	}
	if cfg.NKVHeads == 0 {
		cfg.NKVHeads = cfg.NHeads
	}
	if cfg.RopeTheta == 0 {
		cfg.RopeTheta = 10000
	}
	if cfg.RMSEps == 0 {
		cfg.RMSEps = 1e-5
	}
	rng := rand.New(rand.NewSource(seed))
	normal := func(n int, mean, std float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(mean + std*rng.NormFloat64())
		}
		return x
	}
	dim, hidden := cfg.Dim, cfg.HiddenDim
	q, kv := cfg.NHeads*cfg.HeadDim, cfg.NKVHeads*cfg.HeadDim
	linear := func(out, in int) []float32 { return normal(out*in, 0, 1/math.Sqrt(float64(in))) }
	normMean := 1.0 // what the norms multiply by is about 1: w, or 1 + w for Gemma
	if cfg.NormPlusOne {
		normMean = 0
	}

	w := &weights.LlamaWeights{Cfg: cfg}
	w.Embed = normal(cfg.Vocab*dim, 0, 2/math.Sqrt(float64(dim)))
	for range cfg.NLayers {
		ly := weights.LlamaLayer{
			AttnNorm: normal(dim, normMean, 0.1),
			Wq:       linear(q, dim),
			Wk:       linear(kv, dim),
			Wv:       linear(kv, dim),
			Wo:       linear(dim, q),
			FFNNorm:  normal(dim, normMean, 0.1),
			WGate:    linear(hidden, dim),
			WUp:      linear(hidden, dim),
			WDown:    linear(dim, hidden),
		}
		if cfg.AttnBias {
			ly.Bq, ly.Bk, ly.Bv = normal(q, 0, 0.1), normal(kv, 0, 0.1), normal(kv, 0, 0.1)
		}
		if cfg.QKNorm {
			ly.QNorm, ly.KNorm = normal(cfg.HeadDim, normMean, 0.3), normal(cfg.HeadDim, normMean, 0.3)
		}
		if cfg.PostNorms {
			ly.PostAttn, ly.PostFFN = normal(dim, normMean, 0.1), normal(dim, normMean, 0.1)
		}
		w.Layers = append(w.Layers, ly)
	}
	w.Norm = normal(dim, normMean, 0.1)
	w.LMHead = w.Embed
	if !cfg.TieEmbed {
		w.LMHead = normal(cfg.Vocab*dim, 0, 2/math.Sqrt(float64(dim)))
	}
	return w
}

// Forward appends tokens [M] to the sequence at positions n..n+M-1 (n = s.Len()) and
// runs them through the model together, as Hugging Face LlamaForCausalLM does, each token
// attending to the cache and to the new tokens up to itself:
//
//	x = Embed[tokens] (* EmbedScale, Gemma)                       // [M, dim]
//	for each layer:
//	    h = RMSNorm(x, AttnNorm)
//	    q = h Wq^T + Bq;  k = h Wk^T + Bk;  v = h Wv^T + Bv       // [M, nH|nKV, hd]
//	    (qwen3, Gemma) q = RMSNorm(q, QNorm), k = RMSNorm(k, KNorm), each head
//	    RoPE(q), RoPE(k) at their positions (the layer's base); append k, v to the cache
//	    a = Attention(q, cache) Wo^T      (Gemma: scaled by AttnScale, sliding layers windowed)
//	    x = x + a                         (Gemma: x + RMSNorm(a, PostAttn))
//	    h = RMSNorm(x, FFNNorm)
//	    f = (act(h WGate^T) * (h WUp^T)) WDown^T    (act: SiLU; Gemma: tanh GELU)
//	    x = x + f                         (Gemma: x + RMSNorm(f, PostFFN))
//	logits = RMSNorm(x, Norm) LMHead^T                           // [M, vocab]
//
// Gemma's norms multiply by 1 + w. It returns logits [M, vocab] for every new token (row m
// predicts position n+m+1) and hidden [nLayers][M, dim], hidden[l] being the residual stream
// after layer l, so hidden[nLayers-1] is the input of the final norm (the features EAGLE and
// Medusa heads read).
func (s *LlamaState) Forward(tokens []int) (logits []float32, hidden [][]float32) {
	w, c := s.w, s.w.Cfg
	M, dim, hd := len(tokens), c.Dim, c.HeadDim
	nH, nKV := c.NHeads, c.NKVHeads
	q, kv := nH*hd, nKV*hd
	if M == 0 {
		panic("ref.LlamaState.Forward: no tokens")
	}
	pos := make([]int, M) // [M]
	for m := range pos {
		pos[m] = s.n + m
	}
	T := s.n + M
	norm := func(x, nw []float32, rows, n int) []float32 {
		return kernelref.RMSNorm(x, NormWeight(c, nw), rows, n, c.RMSEps)
	}
	scale := c.AttnScale
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(hd))
	}

	x := kernelref.Embed(w.Embed, tokens, dim) // [M, dim]
	if c.EmbedScale > 0 {
		for i := range x {
			x[i] = float32(float64(x[i]) * c.EmbedScale)
		}
	}
	hidden = make([][]float32, c.NLayers)
	for l := range w.Layers {
		ly := &w.Layers[l]
		h := norm(x, ly.AttnNorm, M, dim)                        // [M, dim]
		qm := kernelref.MatMul(h, ly.Wq, ly.Bq, nil, M, q, dim)  // [M, nH, hd]
		km := kernelref.MatMul(h, ly.Wk, ly.Bk, nil, M, kv, dim) // [M, nKV, hd]
		vm := kernelref.MatMul(h, ly.Wv, ly.Bv, nil, M, kv, dim) // [M, nKV, hd]
		if c.QKNorm {
			qm = norm(qm, ly.QNorm, M*nH, hd) // each [hd] head by itself
			km = norm(km, ly.KNorm, M*nKV, hd)
		}
		kernelref.Rope(qm, pos, M, nH, hd, s.invFreq[l])
		kernelref.Rope(km, pos, M, nKV, hd, s.invFreq[l])
		kCache, vCache := s.appendKV(l, km, vm) // [T, nKV, hd]
		window := 0
		if c.Sliding(l) {
			window = c.SlidingWindow
		}
		att := kernelref.AttentionWindow(qm, kCache, vCache, pos, M, T, nH, nKV, hd, scale, window) // [M, nH, hd]
		if c.PostNorms {
			x = kernelref.Add(x, norm(kernelref.MatMul(att, ly.Wo, nil, nil, M, dim, q), ly.PostAttn, M, dim)) // [M, dim]
		} else {
			x = kernelref.MatMul(att, ly.Wo, nil, x, M, dim, q) // [M, dim]
		}

		h = norm(x, ly.FFNNorm, M, dim)                                      // [M, dim]
		gate := kernelref.MatMul(h, ly.WGate, nil, nil, M, c.HiddenDim, dim) // [M, hidden]
		up := kernelref.MatMul(h, ly.WUp, nil, nil, M, c.HiddenDim, dim)     // [M, hidden]
		act := kernelref.SwiGLU(gate, up)                                    // [M, hidden]
		if c.GeluTanh {
			act = kernelref.GeGLU(gate, up)
		}
		if c.PostNorms {
			x = kernelref.Add(x, norm(kernelref.MatMul(act, ly.WDown, nil, nil, M, dim, c.HiddenDim), ly.PostFFN, M, dim))
		} else {
			x = kernelref.MatMul(act, ly.WDown, nil, x, M, dim, c.HiddenDim) // [M, dim]
		}
		hidden[l] = slices.Clone(x)
	}
	s.n = T

	x = norm(x, w.Norm, M, dim)                                       // [M, dim]
	logits = kernelref.MatMul(x, w.LMHead, nil, nil, M, c.Vocab, dim) // [M, vocab]
	return logits, hidden
}

// NormWeight is the weight an RMSNorm of configuration c multiplies by: w, or 1 + w for Gemma.
func NormWeight(c weights.Config, w []float32) []float32 {
	if !c.NormPlusOne {
		return w
	}
	out := make([]float32, len(w))
	for i, v := range w {
		out[i] = 1 + v
	}
	return out
}

// Generate decodes up to n tokens after prompt with a fresh sequence and returns them
// (without the prompt). The token at position t is Sample(logits, p, seed, 0, t): seq 0,
// pos the position of the token being produced. Generation stops after emitting a token
// in stop, which is included in the result (as Hugging Face generate includes EOS).
func Generate(w *weights.LlamaWeights, prompt []int, n int, p kernelref.SamplingParams, seed uint64, stop []int) []int {
	if len(prompt) == 0 {
		panic("ref.Generate: empty prompt")
	}
	s := NewLlamaState(w)
	V := w.Cfg.Vocab
	logits, _ := s.Forward(prompt)
	last := logits[(len(prompt)-1)*V:] // [vocab]
	var out []int
	for len(out) < n {
		tok := kernelref.Sample(last, p, seed, 0, uint32(s.Len()))
		out = append(out, tok)
		if slices.Contains(stop, tok) || len(out) == n {
			break
		}
		last, _ = s.Forward([]int{tok})
	}
	return out
}
