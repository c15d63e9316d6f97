package ref

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/synth"
)

// A model inflated by synth.Inflate (wider stream, more heads of the same size, a wider MLP,
// more layers) computes the small model's function: every position's logits agree within
// float32 rounding, and the greedy text is the same; with grouped-query attention too.
func TestInflatedModelComputesTheSame(t *testing.T) {
	for _, c := range []struct {
		name  string
		small weights.Config
		size  synth.Size
	}{
		{"multi-head", weights.Config{Arch: "llama", Dim: 48, HiddenDim: 96, NLayers: 2, NHeads: 4, NKVHeads: 4, HeadDim: 12,
			Vocab: 97, MaxSeq: 64, RopeTheta: 10000, RMSEps: 1e-5, TieEmbed: true}, synth.Size{Hidden: 120, Heads: 10, Intermediate: 200, Layers: 5}},
		{"grouped-query", weights.Config{Arch: "llama", Dim: 64, HiddenDim: 80, NLayers: 3, NHeads: 4, NKVHeads: 2, HeadDim: 16,
			Vocab: 61, MaxSeq: 64, RopeTheta: 500000, RMSEps: 1e-6}, synth.Size{Hidden: 128, Heads: 8, Intermediate: 112, Layers: 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			small := RandomLlama(c.small, 7)
			cfg, src, err := synth.Inflate(small.Cfg, small, c.size)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Dim != c.size.Hidden || cfg.NHeads != c.size.Heads || cfg.NKVHeads != c.size.Heads/(c.small.NHeads/c.small.NKVHeads) ||
				cfg.HiddenDim != c.size.Intermediate || cfg.NLayers != c.size.Layers || cfg.HeadDim != c.small.HeadDim {
				t.Fatalf("inflated config %+v", cfg)
			}
			big, err := weights.LlamaFrom(&cfg, src, nil)
			if err != nil {
				t.Fatal(err)
			}
			prompt := []int{1, 5, 9, 33, 2, 17, 40, 8}
			want, _ := NewLlamaState(small).Forward(prompt)
			got, _ := NewLlamaState(big).Forward(prompt)
			worst, scale := 0.0, 0.0
			for i := range want {
				worst = max(worst, math.Abs(float64(got[i]-want[i])))
				scale = max(scale, math.Abs(float64(want[i])))
			}
			if worst > 2e-6*scale || scale == 0 {
				t.Errorf("logits differ by %g (largest logit %g)", worst, scale)
			}
			greedy := kernelref.SamplingParams{}
			if a, b := Generate(small, prompt, 24, greedy, 1, nil), Generate(big, prompt, 24, greedy, 1, nil); !slices.Equal(a, b) {
				t.Errorf("greedy text: %v, small model %v", b, a)
			}
			t.Logf("logits within %.2g of %.3g; %d parameters -> %d", worst, scale, params(small), params(big))
		})
	}
	base := weights.Config{Arch: "llama", Dim: 48, HiddenDim: 96, NLayers: 2, NHeads: 4, NKVHeads: 2, HeadDim: 12, Vocab: 97, MaxSeq: 64, RMSEps: 1e-5}
	small := RandomLlama(base, 1)
	for _, bad := range []synth.Size{
		{Hidden: 40, Heads: 4, Intermediate: 96, Layers: 2}, // narrower
		{Hidden: 96, Heads: 3, Intermediate: 96, Layers: 2}, // fewer heads
		{Hidden: 96, Heads: 5, Intermediate: 96, Layers: 2}, // breaks the 2 query heads per KV head
		{Hidden: 96, Heads: 8, Intermediate: 64, Layers: 1}, // a smaller MLP, fewer layers
	} {
		if _, _, err := synth.Inflate(base, small, bad); !errors.Is(err, synth.ErrInflate) {
			t.Errorf("%+v: %v, want ErrInflate", bad, err)
		}
	}
	q := base
	q.Arch, q.QKNorm = "qwen3", true
	if _, _, err := synth.Inflate(q, small, synth.Size{Hidden: 96, Heads: 8, Intermediate: 96, Layers: 2}); !errors.Is(err, synth.ErrInflate) {
		t.Errorf("qwen3: %v, want ErrInflate", err)
	}
}

// params counts a model's weights.
func params(w *weights.LlamaWeights) int {
	n := len(w.Embed) + len(w.Norm)
	if !w.Cfg.TieEmbed {
		n += len(w.LMHead)
	}
	for _, l := range w.Layers {
		n += len(l.AttnNorm) + len(l.Wq) + len(l.Wk) + len(l.Wv) + len(l.Wo) + len(l.FFNNorm) + len(l.WGate) + len(l.WUp) + len(l.WDown)
	}
	return n
}
