package distill

import (
	"math/rand"
	"testing"

	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/weights"
)

// tinyTarget is a small random target and a dataset generated from it.
func tinyTarget(t *testing.T, aux []int) (*weights.LlamaWeights, *Dataset) {
	t.Helper()
	cfg := weights.Config{Arch: "llama", Dim: 16, HiddenDim: 24, NLayers: 3, NHeads: 2, NKVHeads: 2, HeadDim: 8,
		Vocab: 40, MaxSeq: 32, RopeTheta: 10000, RMSEps: 1e-5, TieEmbed: true, BOS: 1, EOS: []int{2}}
	w := ref.RandomLlama(cfg, 11)
	m, err := NewLlama(w, 0)
	if err != nil {
		t.Fatal(err)
	}
	prompts := [][]int{{1, 5, 9}, {1, 7}, {1, 30, 31, 3}}
	d, err := Generate(m, weights.TargetIDOfWeights("tiny", w), prompts, GenOptions{Greedy: 1, Sampled: 1, MaxLen: 12, K: 8, Aux: aux, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	return w, d
}

// checkTrainerGrad compares a trainer's gradients with finite differences of its loss.
func checkTrainerGrad(t *testing.T, params []*Param, loss func() float64, n int) {
	t.Helper()
	rng := rand.New(rand.NewSource(5))
	for _, p := range params {
		clear(p.G)
	}
	loss()
	grads := map[*Param][]float32{}
	for _, p := range params {
		grads[p] = append([]float32(nil), p.G...)
	}
	for _, p := range params {
		gradCheck(t, p.Name, p.W, grads[p], func() float64 {
			for _, q := range params {
				clear(q.G)
			}
			return loss()
		}, n, rng)
	}
}

func TestEagle3Grad(t *testing.T) {
	w, d := tinyTarget(t, []int{0, 1, 2})
	e, err := NewEagle3(w, d, Eagle3Options{DraftVocab: 20, TTT: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Make the norms and the head less regular than their starting values.
	rng := rand.New(rand.NewSource(6))
	for _, p := range []*Param{e.InNorm, e.HidNorm, e.Norm, e.L.PostNorm} {
		for i := range p.W {
			p.W[i] += float32(0.2 * rng.NormFloat64())
		}
	}
	e.L.Wqkv.fillNormal(rng, 0.3)
	e.L.Wo.fillNormal(rng, 0.3)
	e.L.W13.fillNormal(rng, 0.3)
	e.L.W2.fillNormal(rng, 0.3)
	e.FC.fillNormal(rng, 0.3)
	seqs := []int{0, 3, 4}
	checkTrainerGrad(t, e.Params(), func() float64 { return e.Step(seqs).Loss }, 12)
}
