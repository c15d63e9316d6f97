package ref

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/weights"
)

// MedusaForward runs every Medusa head on one target hidden row (the residual stream after
// the last layer, before the final norm; [dim]) and returns each head's logits [K][vocab]
// and argmax (the draft tokens, head k predicting k+2 places after hidden's position):
//
//	h = RMSNorm(hidden, norm)
//	for each head k:
//	    z = h
//	    for each block j:  z = z + silu(W_kj z + b_kj)
//	    logits_k = Out_k z            (v2, Out nil: lmHead z)
//
// lmHead [vocab, dim] is the target's output projection, read only when m.Out is nil. It
// returns an error when the shapes do not fit.
func MedusaForward(m *weights.Medusa, hidden, norm []float32, eps float64, lmHead []float32) (logits [][]float32, drafts []int, err error) {
	H := m.Dim
	if len(hidden) != H || len(norm) != H {
		return nil, nil, fmt.Errorf("ref: Medusa of dim %d given a hidden row of %d and a norm of %d", H, len(hidden), len(norm))
	}
	h := kernelref.RMSNorm(hidden, norm, 1, H, eps) // [H]
	for k, blocks := range m.Blocks {
		z := h
		for _, b := range blocks {
			if len(b.W) != H*H || len(b.B) != H {
				return nil, nil, fmt.Errorf("ref: Medusa head %d has a block of %d weights and %d biases for dim %d", k, len(b.W), len(b.B), H)
			}
			y := kernelref.MatMul(z, b.W, b.B, nil, 1, H, H) // [H]
			next := make([]float32, H)
			for i := range next {
				next[i] = float32(float64(z[i]) + kernelref.Silu(float64(y[i])))
			}
			z = next
		}
		out := lmHead
		if m.Out != nil {
			out = m.Out[k]
		}
		if len(out) == 0 || len(out)%H != 0 {
			return nil, nil, fmt.Errorf("ref: Medusa head %d output layer of %d values for dim %d", k, len(out), H)
		}
		V := len(out) / H
		l := kernelref.MatMul(z, out, nil, nil, 1, V, H) // [V]
		logits = append(logits, l)
		drafts = append(drafts, kernelref.Argmax(l))
	}
	return logits, drafts, nil
}

// RandomMedusa makes K random heads of R blocks for hidden size dim, with output layers
// [vocab, dim] when vocab > 0 (v1) or none (v2: the target's LM head). The blocks' weights are
// scaled so that z keeps a similar size through the blocks.
func RandomMedusa(K, R, dim, vocab int, seed int64) *weights.Medusa {
	rng := rand.New(rand.NewSource(seed))
	normal := func(n int, std float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(std * rng.NormFloat64())
		}
		return x
	}
	m := &weights.Medusa{Dim: dim, Layers: R, Layout: weights.MedusaV2}
	for range K {
		var blocks []weights.MedusaBlock
		for range R {
			blocks = append(blocks, weights.MedusaBlock{W: normal(dim*dim, 1/math.Sqrt(float64(dim))), B: normal(dim, 0.1)})
		}
		m.Blocks = append(m.Blocks, blocks)
		if vocab > 0 {
			m.Out = append(m.Out, normal(vocab*dim, 1/math.Sqrt(float64(dim))))
		}
	}
	if vocab > 0 {
		m.Vocab, m.Layout = vocab, weights.MedusaV1
	}
	return m
}
