package distill

import (
	"math"
	"path/filepath"
	"testing"
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
		if err := WriteSVG(filepath.Join(t.TempDir(), name+".svg"), name, "step", "loss", CurveSeries(curve)); err != nil {
			t.Fatal(err)
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
