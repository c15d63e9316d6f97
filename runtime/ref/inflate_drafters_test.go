package ref

import (
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/synth"
)

// The drafter heads inflated by synth (Medusa, EAGLE-1, EAGLE-3), on the inflated target's
// features (the small target's padded with zeros), compute the small heads' logits, so their
// drafts and acceptance are the same.
func TestInflatedDraftersComputeTheSame(t *testing.T) {
	small := weights.Config{Arch: "llama", Dim: 48, HiddenDim: 96, NLayers: 6, NHeads: 4, NKVHeads: 4, HeadDim: 12,
		Vocab: 97, MaxSeq: 64, RopeTheta: 10000, RMSEps: 1e-5, TieEmbed: true}
	size := synth.Size{Hidden: 120, Heads: 10, Intermediate: 200, Layers: 9}
	tw := RandomLlama(small, 3)
	bigCfg, src, err := synth.Inflate(tw.Cfg, tw, size)
	if err != nil {
		t.Fatal(err)
	}
	bw, err := weights.LlamaFrom(&bigCfg, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(4))
	random := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	// padBlocks pads every block of w values to W (a row of features, or three side by side).
	padBlocks := func(x []float32, w, W int) []float32 {
		var out []float32
		for i := 0; i < len(x); i += w {
			out = append(out, x[i:i+w]...)
			out = append(out, make([]float32, W-w)...)
		}
		return out
	}
	same := func(what string, a, b []float32) {
		t.Helper()
		worst, scale := 0.0, 0.0
		for i := range a {
			worst, scale = max(worst, math.Abs(float64(a[i]-b[i]))), max(scale, math.Abs(float64(a[i])))
		}
		if len(a) != len(b) || worst > 2e-6*scale || scale == 0 {
			t.Errorf("%s: %d and %d values, differing by %g (largest %g)", what, len(a), len(b), worst, scale)
		}
	}

	m := RandomMedusa(3, 2, small.Dim, small.Vocab, 5)
	m2, err := synth.InflateMedusa(m, bigCfg.Dim)
	if err != nil {
		t.Fatal(err)
	}
	hidden := random(small.Dim)
	want, _, err := MedusaForward(m, hidden, tw.Norm, small.RMSEps, tw.LMHead)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := MedusaForward(m2, padBlocks(hidden, small.Dim, bigCfg.Dim), bw.Norm, bigCfg.RMSEps, bw.LMHead)
	if err != nil {
		t.Fatal(err)
	}
	for k := range want {
		same("medusa head", want[k], got[k])
	}

	tokens := []int{3, 14, 15, 92, 6}
	M := len(tokens)
	for _, c := range []struct {
		kind string
		dim  int // the head's hidden size (EAGLE-3: the target's, so it reads the target's embedding, or its own)
	}{{weights.EagleKind1, 48}, {weights.EagleKind3, 48}, {weights.EagleKind3, 40}} {
		head := weights.Config{Arch: "llama", Dim: c.dim, HiddenDim: 64, NHeads: 4, NKVHeads: 2, HeadDim: 12, RopeTheta: 10000, RMSEps: 1e-5, MaxSeq: 64}
		e := RandomEagle(c.kind, head, small, 0, 9)
		e2, err := synth.InflateEagle(e, small, tw, size)
		if err != nil {
			t.Fatal(err)
		}
		width, width2 := small.Dim, bigCfg.Dim
		if c.kind == weights.EagleKind3 {
			width, width2 = 3*small.Dim, 3*bigCfg.Dim
			if aux, _ := e.AuxLayers(small.NLayers); !slices.Equal(e2.AuxLayerIDs, aux) {
				t.Errorf("eagle3 aux layers %v, want the small target's %v", e2.AuxLayerIDs, aux)
			}
		}
		feats := random(M * width)
		wantLogits, wantOut := NewEagleState(e, tw).Forward(tokens, feats, width)
		gotLogits, gotOut := NewEagleState(e2, bw).Forward(tokens, padBlocks(feats, small.Dim, bigCfg.Dim), width2)
		same(c.kind+" logits", wantLogits, gotLogits)
		if c.kind == weights.EagleKind1 {
			same("eagle feature", padBlocks(wantOut, small.Dim, bigCfg.Dim), gotOut)
		} else {
			same("eagle3 feature", wantOut, gotOut)
		}
	}
}
