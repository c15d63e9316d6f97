package distill

import (
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/weights"
)

// checkSpecDecode decodes prompts with drafter d by real CPU speculative decoding and checks
// that the output is the target's plain greedy output and that Simulate counts the same
// acceptance from the reference alone.
func checkSpecDecode(t *testing.T, tm *Llama, d SimDrafter, prompts [][]int, aux []int, maxNew int) Acceptance {
	t.Helper()
	refs, err := Reference(tm, prompts, maxNew, aux)
	if err != nil {
		t.Fatal(err)
	}
	var total Acceptance
	for _, k := range []int{1, 3, 8} {
		var sum Acceptance
		for i, p := range prompts {
			got, acc := SpecDecode(tm, d, p, k, maxNew, aux)
			want := refs[i].Tokens[refs[i].Prompt:]
			if n := len(want); n > 0 && slices.Contains(tm.Cfg.EOS, want[n-1]) {
				want = want[:n-1]
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s k=%d prompt %d: speculative output %v, greedy %v", d.Name(), k, i, got, want)
			}
			sim := Simulate(d, refs[i:i+1], k, maxNew, tm.Cfg.MaxSeq, tm.Cfg.EOS)
			if sim.Steps != acc.Steps || sim.Emitted != acc.Emitted || !slices.Equal(sim.AcceptedPerPosition, acc.AcceptedPerPosition) {
				t.Fatalf("%s k=%d prompt %d: simulated %+v, decoded %+v", d.Name(), k, i, sim, acc)
			}
			sum.Steps += acc.Steps
			sum.Emitted += acc.Emitted
		}
		if k == 8 {
			total = sum
		}
	}
	return total
}

func simTarget(t *testing.T) (*weights.LlamaWeights, *Llama) {
	cfg := weights.Config{Arch: "llama", Dim: 32, HiddenDim: 48, NLayers: 4, NHeads: 4, NKVHeads: 4, HeadDim: 8,
		Vocab: 64, MaxSeq: 48, RopeTheta: 10000, RMSEps: 1e-5, TieEmbed: true, BOS: 1, EOS: []int{2}}
	w := ref.RandomLlama(cfg, 21)
	m, err := NewLlama(w, 0)
	if err != nil {
		t.Fatal(err)
	}
	return w, m
}

var simPrompts = [][]int{{1, 5, 9, 33}, {1, 60}, {1, 7, 7, 7, 7, 7, 7, 7, 40}}

// Greedy speculative decoding with every kind of drafter gives exactly the target's greedy
// output; the target drafting for itself is accepted in full.
func TestSpecDecodeIsExact(t *testing.T) {
	tw, tm := simTarget(t)
	self := checkSpecDecode(t, tm, NewSimDraftModel(tm), simPrompts, nil, 30)
	if self.Emitted < 3*self.Steps {
		t.Errorf("the target drafting for itself: %d tokens in %d steps", self.Emitted, self.Steps)
	}
	hc := tw.Cfg
	hc.HiddenDim = 40
	aux := []int{1, 2, 3}
	for _, kind := range []string{weights.EagleKind1, weights.EagleKind3} {
		w := ref.RandomEagle(kind, hc, tw.Cfg, 20, 5)
		if kind == weights.EagleKind3 {
			w.AuxLayerIDs = aux
		}
		h, err := NewEagleHead(w, tm)
		if err != nil {
			t.Fatal(err)
		}
		checkSpecDecode(t, tm, NewSimEagle(h, tm), simPrompts, aux, 30)
	}
	md, err := NewSimMedusa(ref.RandomMedusa(4, 1, 32, 0, 6), tm)
	if err != nil {
		t.Fatal(err)
	}
	checkSpecDecode(t, tm, md, simPrompts, nil, 30)
}
