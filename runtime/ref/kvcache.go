package ref

import (
	"fmt"

	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/weights"
)

// LlamaState is one sequence being decoded by the reference model: its key/value cache,
// one growing buffer per layer holding the rotated keys and the values of every token so
// far, token t at position t.
type LlamaState struct {
	w       *weights.LlamaWeights
	invFreq [][]float64 // [nLayers][headDim/2] rotary inverse frequencies (Gemma's local layers have their own base)
	k       [][]float32 // [nLayers][T, nKV, headDim] keys, after RoPE
	v       [][]float32 // [nLayers][T, nKV, headDim] values
	n       int         // T, the number of cached tokens
}

// NewLlamaState returns an empty sequence for w.
func NewLlamaState(w *weights.LlamaWeights) *LlamaState {
	c := w.Cfg
	s := &LlamaState{w: w, k: make([][]float32, c.NLayers), v: make([][]float32, c.NLayers)}
	for l := range c.NLayers {
		if c.Sliding(l) {
			s.invFreq = append(s.invFreq, kernelref.RopeInvFreq(c.HeadDim, c.RopeLocalTheta, nil))
		} else {
			s.invFreq = append(s.invFreq, kernelref.RopeInvFreq(c.HeadDim, c.RopeTheta, c.RopeScaling))
		}
	}
	return s
}

// Len returns the number of tokens in the cache (the position of the next token).
func (s *LlamaState) Len() int { return s.n }

// Truncate drops every cached token at position n or later, so that the next Forward
// continues from position n (after a rejected draft, say).
func (s *LlamaState) Truncate(n int) {
	if n < 0 || n > s.n {
		panic(fmt.Sprintf("ref.LlamaState.Truncate: %d outside a cache of %d", n, s.n))
	}
	rowLen := s.w.Cfg.NKVHeads * s.w.Cfg.HeadDim
	for l := range s.k {
		s.k[l] = s.k[l][:n*rowLen]
		s.v[l] = s.v[l][:n*rowLen]
	}
	s.n = n
}

// appendKV writes the keys and values k, v [M, nKV, headDim] of M new tokens at the end
// of layer l's cache, and returns that layer's whole cache [T, nKV, headDim]. The caller
// advances n once every layer is written.
func (s *LlamaState) appendKV(l int, k, v []float32) (kCache, vCache []float32) {
	s.k[l] = append(s.k[l], k...)
	s.v[l] = append(s.v[l], v...)
	return s.k[l], s.v[l]
}
