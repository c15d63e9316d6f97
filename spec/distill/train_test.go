package distill

import (
	"errors"
	"math"
	"testing"

	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/weights"
)

// A short training run on a tiny target's data: every trainer's validation loss (here the
// training sequences themselves) falls well below where it started, and the curve plots.
func TestTrainingLowersLoss(t *testing.T) {
	w, d := tinyTarget(t, []int{0, 1, 2})
	all := make([]int, d.Seqs())
	for i := range all {
		all[i] = i
	}
	e3, _ := NewEagle3(w, d, Eagle3Options{DraftVocab: 30, TTT: 3, WarmStart: true, Seed: 1})
	e1, _ := NewEagle1(w, d, Eagle1Options{Noise: 0.1, Seed: 1})
	md, _ := NewMedusa(w, d, MedusaOptions{Heads: 3})
	dm, _ := NewDraftModel(w, d, DraftOptions{Layers: 2, Dim: 16, Hidden: 24, Heads: 2, Seed: 1})
	for name, tr := range map[string]Trainer{"eagle3": e3, "eagle": e1, "medusa": md, "draft_model": dm} {
		before := tr.Step(all).Loss
		curve, err := Train(tr, d, all, all, TrainOptions{Epochs: 60, BatchRows: 40, LR: 3e-3, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		after := curve[len(curve)-1].Val
		want := 0.7 * before
		if name == "medusa" {
			want = 0.9 * before // one ResBlock before a frozen head: most of its loss is the teacher's entropy
		}
		t.Logf("%s: loss %.4f before, %.4f after %d steps", name, before, after, len(curve))
		if !(after < want) || math.IsNaN(after) {
			t.Errorf("%s: loss %.4f before training, %.4f after %d steps", name, before, after, len(curve))
		}
	}
}

// Training options out of range (NaN and infinities included) are refused before a step.
func TestTrainRefusesBadOptions(t *testing.T) {
	w, d := tinyTarget(t, []int{0, 1, 2})
	all := make([]int, d.Seqs())
	for i := range all {
		all[i] = i
	}
	md, _ := NewMedusa(w, d, MedusaOptions{Heads: 2})
	good := TrainOptions{Epochs: 1, BatchRows: 40, LR: 1e-3, Seed: 1}
	for _, bad := range []TrainOptions{
		{Epochs: math.NaN(), BatchRows: 40, LR: 1e-3}, {Epochs: 0, BatchRows: 40, LR: 1e-3},
		{Epochs: math.Inf(1), BatchRows: 40, LR: 1e-3}, {Epochs: 1, BatchRows: 0, LR: 1e-3},
		{Epochs: 1, BatchRows: 40, LR: math.NaN()}, {Epochs: 1, BatchRows: 40, LR: -1},
	} {
		if _, err := Train(md, d, all, all, bad); err == nil {
			t.Errorf("%+v trained", bad)
		}
	}
	if _, err := Train(md, d, all, all, good); err != nil {
		t.Errorf("%+v: %v", good, err)
	}
}

// Generation options out of range are refused before any sequence runs.
func TestGenerateRefusesBadOptions(t *testing.T) {
	cfg := weights.Config{Arch: "llama", Dim: 16, HiddenDim: 24, NLayers: 3, NHeads: 2, NKVHeads: 2, HeadDim: 8,
		Vocab: 40, MaxSeq: 32, RopeTheta: 10000, RMSEps: 1e-5, TieEmbed: true, BOS: 1, EOS: []int{2}}
	w := ref.RandomLlama(cfg, 11)
	m, err := NewLlama(w, 0)
	if err != nil {
		t.Fatal(err)
	}
	id, prompts := weights.TargetIDOfWeights("tiny", w), [][]int{{1, 5, 9}}
	nan := float32(math.NaN())
	for _, o := range []GenOptions{
		{Greedy: 1, Temperature: nan}, {Sampled: 1, Temperature: -1}, {Sampled: 1, Temperature: float32(math.Inf(1))},
		{Sampled: 1, TopP: nan}, {Sampled: 1, TopP: 1.5}, {Greedy: 1, K: 41}, {Greedy: 1, K: -1},
		{Greedy: 1, Batch: -1}, {Greedy: 1, MaxLen: -4}, {}, {Greedy: -1, Sampled: 2}, {Greedy: 1, Aux: []int{3}},
	} {
		if _, err := Generate(m, id, prompts, o); err == nil {
			t.Errorf("%+v generated", o)
		}
	}
	if d, err := Generate(m, id, prompts, GenOptions{Greedy: 1, Sampled: 1, MaxLen: 8, K: 4}); err != nil || d.Seqs() != 2 {
		t.Errorf("good options: %v", err)
	}
	// A vocabulary past 16-bit ids (Llama 3's, Qwen's) is refused, not truncated.
	big := cfg
	big.Vocab = 1<<16 + 1
	bm, err := NewLlama(ref.RandomLlama(big, 3), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(bm, id, prompts, GenOptions{Greedy: 1, MaxLen: 8, K: 4}); !errors.Is(err, weights.ErrUnsupported) {
		t.Errorf("a vocabulary of %d: %v, want ErrUnsupported", big.Vocab, err)
	}
}
