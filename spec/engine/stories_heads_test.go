package engine

import (
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/weights"
)

// On stories15M, Medusa, EAGLE and EAGLE-3 heads written in their published layouts (random
// weights: no trained heads exist for this model) load through the engine and leave greedy
// output token-identical to plain greedy, for k = 1 and k = 8.
func TestStories15MHeadsGreedy(t *testing.T) {
	e := stories(t, nil)
	c := e.Info().Config
	const prompt, n = "Lily and Tom went to the park. They", 24
	plain := generate(t, e, prompt, GenerateOptions{MaxTokens: n})
	medusaDir := t.TempDir()
	if err := weights.WriteMedusa(medusaDir, ref.RandomMedusa(4, 1, c.Dim, c.Vocab, 3), weights.MedusaV1, weights.F16); err != nil {
		t.Fatal(err)
	}
	head := c
	head.HiddenDim = 256
	eagleDir, eagle3Dir := t.TempDir(), t.TempDir()
	if err := weights.WriteEagle(eagleDir, ref.RandomEagle(weights.EagleKind1, head, c, 0, 4), weights.EagleWriteOptions{DType: weights.F16}); err != nil {
		t.Fatal(err)
	}
	if err := weights.WriteEagle(eagle3Dir, ref.RandomEagle(weights.EagleKind3, head, c, 4000, 5), weights.EagleWriteOptions{DType: weights.BF16}); err != nil {
		t.Fatal(err)
	}
	for _, sc := range []struct{ mode, dir string }{{"medusa", medusaDir}, {"eagle", eagleDir}, {"eagle3", eagle3Dir}} {
		e := stories(t, &spec.Config{Mode: sc.mode, NumSpeculativeTokens: 8, Model: sc.dir})
		// Warming the drafter and calibrating ran scratch sequences: they gave everything back.
		if n := e.target.Pool().InUse(); n != 0 {
			t.Fatalf("%s: %d KV pages in use after load", sc.mode, n)
		}
		for _, k := range []int{1, 8} {
			res := generate(t, e, prompt, GenerateOptions{MaxTokens: n, NumSpeculativeTokens: k})
			if !slices.Equal(res.Tokens, plain.Tokens) {
				t.Fatalf("%s k=%d: %q\nplain: %q", sc.mode, k, res.Text, plain.Text)
			}
			if res.Metrics.DraftTokens == 0 {
				t.Fatalf("%s k=%d proposed no drafts", sc.mode, k)
			}
			t.Logf("%s k=%d: %d steps, %d draft tokens, acceptance %.2f", sc.mode, k, res.Metrics.Steps, res.Metrics.DraftTokens, res.Metrics.AcceptanceRate())
		}
	}
}
