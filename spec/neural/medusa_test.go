package neural

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/weights"
)

// writeMedusaMethod writes heads to a folder in layout and makes the medusa drafter from it
// through the registry, on target m.
func writeMedusaMethod(t testing.TB, m *model.Model, heads *weights.Medusa, layout string) (spec.Method, error) {
	t.Helper()
	dir := t.TempDir()
	if err := weights.WriteMedusa(dir, heads, layout, weights.F32); err != nil {
		t.Fatal(err)
	}
	return openDrafter(t, spec.Config{Mode: "medusa", NumSpeculativeTokens: 1, Model: dir}, m)
}

// zeroHeads are Medusa heads with zero weights and biases on the target's LM head: every head
// drafts the target's own prediction for the newest token's position, which is right whenever
// the text repeats a token (a loop of period 1), so some drafts pass and some fail.
func zeroHeads(K, R, dim int) *weights.Medusa {
	m := ref.RandomMedusa(K, R, dim, 0, 1)
	for _, blocks := range m.Blocks {
		for _, b := range blocks {
			clear(b.W)
			clear(b.B)
		}
	}
	return m
}

// Greedy decoding with Medusa heads gives plain greedy's tokens for every k, with random v1
// heads (K = 5 > k for small k), random v2 heads with shared-size blocks, and zero heads.
func TestMedusaGreedyExact(t *testing.T) {
	tied := loopCfg
	tied.TieEmbed = true
	w := ref.RandomLlama(tied, 11)
	m := newDeviceModel(t, w)
	const n = 40
	want := ref.Generate(w, loopPrompt, n, kernelref.SamplingParams{}, 0, nil)
	heads := []struct {
		name   string
		w      *weights.Medusa
		layout string
	}{
		{"random-v1-K5-R1", ref.RandomMedusa(5, 1, tied.Dim, tied.Vocab, 3), weights.MedusaV1},
		{"random-v2-K3-R2", ref.RandomMedusa(3, 2, tied.Dim, 0, 4), weights.MedusaV2},
		{"zero-v2-K8-R1", zeroHeads(8, 1, tied.Dim), weights.MedusaV2},
	}
	accepted, rejected := 0, 0
	for _, h := range heads {
		d, err := writeMedusaMethod(t, m, h.w, h.layout)
		if err != nil {
			t.Fatal(err)
		}
		var total spec.Metrics
		for k := 1; k <= spec.MaxSpeculativeTokens; k++ {
			got, met := decode(t, w, m, d, loopPrompt, k, n, batch.Sampling{}, nil)
			if !slices.Equal(got, want) {
				t.Fatalf("%s k=%d: speculative greedy\n%v\nplain\n%v", h.name, k, got, want)
			}
			if met.Drafts > 0 && met.DraftTokens/met.Drafts > min(k, h.w.Heads()) {
				t.Fatalf("%s k=%d: %d drafts in %d steps", h.name, k, met.DraftTokens, met.Drafts)
			}
			total.DraftTokens += met.DraftTokens
			total.AcceptedTokens += met.AcceptedTokens
		}
		accepted += total.AcceptedTokens
		rejected += total.DraftTokens - total.AcceptedTokens
		t.Logf("%s: acceptance over k=1..8: %.3f (%d drafts)", h.name, total.AcceptanceRate(), total.DraftTokens)
	}
	if accepted == 0 || rejected == 0 {
		t.Errorf("Medusa had %d drafts accepted, %d rejected: want both", accepted, rejected)
	}
}

// Sampled decoding with Medusa heads is reproducible for a seed and differs across seeds.
func TestMedusaSampledReproducible(t *testing.T) {
	w := ref.RandomLlama(loopCfg, 5)
	m := newDeviceModel(t, w)
	d, err := writeMedusaMethod(t, m, ref.RandomMedusa(4, 1, loopCfg.Dim, loopCfg.Vocab, 8), weights.MedusaV1)
	if err != nil {
		t.Fatal(err)
	}
	s := batch.Sampling{Temperature: 1, TopP: 0.9, Seed: 2024}
	a, _ := decode(t, w, m, d, loopPrompt, 4, 30, s, nil)
	b, _ := decode(t, w, m, d, loopPrompt, 4, 30, s, nil)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed:\n%v\n%v", a, b)
	}
	s.Seed++
	if c, _ := decode(t, w, m, d, loopPrompt, 4, 30, s, nil); slices.Equal(a, c) {
		t.Fatalf("seeds %d and %d gave the same tokens %v", s.Seed-1, s.Seed, a)
	}
}

// A malformed Medusa checkpoint, or heads that do not fit the target, give clear errors.
func TestMedusaErrors(t *testing.T) {
	m := newDeviceModel(t, ref.RandomLlama(loopCfg, 2))
	if _, err := writeMedusaMethod(t, m, ref.RandomMedusa(2, 1, loopCfg.Dim/2, 0, 1), weights.MedusaV2); !errors.Is(err, batch.ErrBadInput) ||
		!strings.Contains(err.Error(), "hidden size") {
		t.Errorf("heads of another hidden size: %v", err)
	}
	if _, err := writeMedusaMethod(t, m, ref.RandomMedusa(2, 1, loopCfg.Dim, 50, 1), weights.MedusaV1); !errors.Is(err, batch.ErrBadInput) ||
		!strings.Contains(err.Error(), "vocabulary") {
		t.Errorf("output layers of another vocabulary: %v", err)
	}
	// A checkpoint with a missing tensor: drop head 1's bias from a written file.
	dir := t.TempDir()
	if err := weights.WriteMedusa(dir, ref.RandomMedusa(2, 1, loopCfg.Dim, 0, 1), weights.MedusaV2, weights.F32); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, weights.MedusaFileName)
	st, err := weights.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var keep []weights.Tensor
	for _, name := range st.Names() {
		if tn, err := st.Tensor(name); err == nil && name != "1.0.linear.bias" {
			keep = append(keep, weights.Tensor{Name: tn.Name, DType: tn.DType, Shape: tn.Shape, Data: slices.Clone(tn.Data)})
		}
	}
	st.Close()
	if err := weights.WriteSafeTensors(path, keep, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := openDrafter(t, spec.Config{Mode: "medusa", NumSpeculativeTokens: 1, Model: dir}, m); !errors.Is(err, weights.ErrMissingTensor) ||
		!strings.Contains(err.Error(), "1.0.linear.bias") {
		t.Errorf("a missing bias: %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := openDrafter(t, spec.Config{Mode: "medusa", NumSpeculativeTokens: 1, Model: dir}, m); err == nil || !strings.Contains(err.Error(), weights.MedusaFileName) {
		t.Errorf("no weights file: %v", err)
	}
	if _, err := openDrafter(t, spec.Config{Mode: "medusa", NumSpeculativeTokens: 1, Model: dir}, nil); !errors.Is(err, spec.ErrNeedsTarget) {
		t.Error("medusa without a target model was accepted")
	}
}
