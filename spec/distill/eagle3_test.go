package distill

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/weights"
)

// tinyTarget is a small random target and a dataset generated from it.
func tinyTarget(t *testing.T, aux []int) (*weights.LlamaWeights, *Dataset) {
	return tinyTargetHeads(t, aux, 2, 2)
}

// tinyTargetHeads is tinyTarget with heads query heads sharing kvHeads key/value heads.
func tinyTargetHeads(t *testing.T, aux []int, heads, kvHeads int) (*weights.LlamaWeights, *Dataset) {
	t.Helper()
	cfg := weights.Config{Arch: "llama", Dim: 16, HiddenDim: 24, NLayers: 3, NHeads: heads, NKVHeads: kvHeads, HeadDim: 16 / heads,
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

// What the EAGLE-3 trainer computes is what the head computes when it drafts: the logits
// of TTT step k at row t equal those of depth k+1 of EagleHead after a catch-up over rows
// 0..t, fed the true tokens at the depths (as the training-time test feeds them).
// A warm start from a target with grouped-query attention gives each query head of a group
// the key/value rows of the group's shared head, and the exported head (a key/value head per
// query head) loads next to the target.
func TestEagle3WarmStartGQA(t *testing.T) {
	w, d := tinyTargetHeads(t, []int{0, 1, 2}, 4, 2)
	e, err := NewEagle3(w, d, Eagle3Options{DraftVocab: 20, TTT: 2, WarmStart: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	H, hd, last := w.Cfg.Dim, w.Cfg.HeadDim, w.Layers[len(w.Layers)-1]
	for r, src := range [][]float32{last.Wq, last.Wk, last.Wv} {
		for h := range 4 {
			from := h // the target's head whose rows head h starts from
			if r > 0 {
				from = h / 2
			}
			for i := range hd {
				got := e.L.Wqkv.W[(r*H+h*hd+i)*2*H+H : (r*H+h*hd+i+1)*2*H]
				want := src[(from*hd+i)*H : (from*hd+i+1)*H]
				if !slices.Equal(got, want) {
					t.Fatalf("projection %d, head %d, row %d: %v, want the target's head %d: %v", r, h, i, got, from, want)
				}
			}
		}
	}
	tm, err := NewLlama(w, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewEagleHead(e.Export(), tm); err != nil {
		t.Fatal(err)
	}
}

func TestEagle3TrainMatchesInference(t *testing.T) {
	w, d := tinyTarget(t, []int{0, 1, 2})
	e, err := NewEagle3(w, d, Eagle3Options{DraftVocab: 25, TTT: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	roughen(rand.New(rand.NewSource(9)), 0.2, e.Params()...)
	s := 1
	e.keep = true
	e.Step([]int{s})
	tm, err := NewLlama(w, 0)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewEagleHead(e.Export(), tm)
	if err != nil {
		t.Fatal(err)
	}
	T, H, Vd := d.SeqLen(s), w.Cfg.Dim, 25
	feats := make([]float32, T*3*H)
	d.AuxRows(feats, d.Off[s], d.Off[s+1])
	tok := func(i int) int { return int(d.Tokens[d.Off[s]+i]) }
	for row := 0; row+1 < T; row++ {
		st := h.NewState()
		var toks []int
		for i := 0; i <= row; i++ {
			toks = append(toks, tok(i+1))
		}
		logits, out := st.Forward(toks, feats[:(row+1)*3*H], 3*H)
		for k := 0; k < 3 && row+1+k < T; k++ {
			if k > 0 {
				logits, out = st.Forward([]int{tok(row + 1 + k)}, out, H)
			} else {
				logits, out = logits[row*Vd:], out[row*H:]
			}
			maxRelDiff(t, "step logits", e.kept[k][row*Vd:(row+1)*Vd], logits[:Vd], 1e-4)
		}
	}
}
