package model

import (
	"fmt"
	"math"
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/wgsl"
)

var testConfigs = []weights.Config{
	{Arch: "llama", Dim: 64, HiddenDim: 96, NLayers: 2, NHeads: 4, NKVHeads: 4, HeadDim: 16, Vocab: 300, MaxSeq: 96, RopeTheta: 10000, RMSEps: 1e-5, TieEmbed: true},
	{Arch: "qwen2", Dim: 48, HiddenDim: 80, NLayers: 3, NHeads: 6, NKVHeads: 2, HeadDim: 8, Vocab: 257, MaxSeq: 80, RopeTheta: 1e6, RMSEps: 1e-6, AttnBias: true},
	{Arch: "llama", Dim: 32, HiddenDim: 64, NLayers: 2, NHeads: 2, NKVHeads: 1, HeadDim: 16, Vocab: 100, MaxSeq: 64, RopeTheta: 500000, RMSEps: 1e-5,
		RopeScaling: &weights.RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPos: 16}},
	// Linear rope scaling (positions compressed 4x).
	{Arch: "llama", Dim: 32, HiddenDim: 64, NLayers: 1, NHeads: 2, NKVHeads: 1, HeadDim: 16, Vocab: 100, MaxSeq: 64, RopeTheta: 10000, RMSEps: 1e-5,
		RopeScaling: &weights.RopeScaling{Linear: true, Factor: 4}},
	// Rows of 1 KiB (f32) and 512 B (f16): the weights are uploaded with padded row strides.
	{Arch: "llama", Dim: 256, HiddenDim: 512, NLayers: 1, NHeads: 4, NKVHeads: 2, HeadDim: 64, Vocab: 128, MaxSeq: 64, RopeTheta: 10000, RMSEps: 1e-5},
	// Qwen3: q and k normalized per head, heads wider than hidden / heads (q is 96 wide, dim 48).
	{Arch: "qwen3", Dim: 48, HiddenDim: 80, NLayers: 2, NHeads: 4, NKVHeads: 2, HeadDim: 24, Vocab: 200, MaxSeq: 80, RopeTheta: 1e6, RMSEps: 1e-6, QKNorm: true},
	// Gemma 3: norms as 1 + w around attention and the MLP, a scaled embedding, GeGLU, its own
	// attention scale, sliding layers (a window of 5 tokens, their own rope base) and a global one.
	{Arch: "gemma3_text", Dim: 64, HiddenDim: 96, NLayers: 3, NHeads: 2, NKVHeads: 1, HeadDim: 32, Vocab: 200, MaxSeq: 80,
		RopeTheta: 1e6, RMSEps: 1e-6, TieEmbed: true, QKNorm: true, NormPlusOne: true, GeluTanh: true, PostNorms: true,
		EmbedScale: 8, AttnScale: 0.2, SlidingWindow: 5, SlidingLayers: []bool{true, false, true}, RopeLocalTheta: 10000},
}

func maxRelErr(got, want []float32) (float64, int) {
	scale := 0.0
	for _, w := range want {
		scale = math.Max(scale, math.Abs(float64(w)))
	}
	worst, at := 0.0, -1
	for i := range want {
		e := math.Abs(float64(got[i]-want[i])) / scale
		if e > worst || math.IsNaN(e) {
			worst, at = e, i
		}
	}
	return worst, at
}

// TestForwardLogitsMatchReference: prefill (tiled matmul path), decode steps (matvec path) and
// a multi-token verify step all give the reference forward's logits.
func TestForwardLogitsMatchReference(t *testing.T) {
	d := testDevice(t)
	for ci, cfg := range testConfigs {
		for _, wt := range []wgsl.WeightType{wgsl.F32, wgsl.F16} {
			t.Run(fmt.Sprintf("%d-%s-%v", ci, cfg.Arch, wt), func(t *testing.T) {
				w := ref.RandomLlama(cfg, int64(ci+1))
				if wt == wgsl.F16 {
					w = roundWeightsF16(w)
				}
				m, err := New(d, w, Options{Weights: wt, PageSize: 8, PrefillChunk: 32})
				if err != nil {
					t.Fatal(err)
				}
				st := ref.NewLlamaState(w)
				seq := m.Pool().NewSequence()
				tol := 2e-4
				if wt == wgsl.F16 {
					tol = 2e-3 // the activations stay f32; only the weights were rounded
				}
				steps := [][]int{{1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 49, 53, 57, 61, 65, 69, 73, 77, 81, 85, 89, 93, 97, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}, {7}, {8}, {9, 10, 11, 12}}
				for si, toks := range steps {
					nd := 0
					if si == 3 {
						nd = 3
					}
					if _, err := m.Forward(seq, toks, nd, nil, batch.Sampling{}); err != nil {
						t.Fatal(err)
					}
					got, err := m.Logits(nd + 1)
					if err != nil {
						t.Fatal(err)
					}
					want, _ := st.Forward(toks)
					want = want[(len(toks)-nd-1)*cfg.Vocab:]
					if e, at := maxRelErr(got, want); e > tol {
						t.Fatalf("step %d: logits off by %.2g (relative to max) at %d: got %v want %v", si, e, at, got[at], want[at])
					}
				}
				if seq.Len() != st.Len() {
					t.Fatalf("device sequence length %d, reference %d", seq.Len(), st.Len())
				}
			})
		}
	}
}

func roundWeightsF16(w *weights.LlamaWeights) *weights.LlamaWeights {
	r := func(v []float32) []float32 {
		out := make([]float32, len(v))
		for i, f := range v {
			out[i] = weights.F16ToF32(weights.F32ToF16(f))
		}
		return out
	}
	c := *w
	c.Embed, c.LMHead = r(w.Embed), r(w.LMHead)
	if w.Cfg.TieEmbed {
		c.LMHead = c.Embed
	}
	c.Layers = nil
	for _, l := range w.Layers {
		l.Wq, l.Wk, l.Wv, l.Wo = r(l.Wq), r(l.Wk), r(l.Wv), r(l.Wo)
		l.WGate, l.WUp, l.WDown = r(l.WGate), r(l.WUp), r(l.WDown)
		c.Layers = append(c.Layers, l)
	}
	return &c
}
