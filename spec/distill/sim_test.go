package distill

import (
	"context"
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/sched"
	"github.com/wspec/wspec/weights"
)

// replay decodes prompt with the drafters newDrafter makes, k drafts a step, by real
// speculative decoding on the CPU: the scheduler over the target tm (NewCPUTarget).
func replay(t *testing.T, tm *Llama, newDrafter func() SimDrafter, prompt []int, k, maxNew int, aux []int) ([]int, spec.Metrics) {
	t.Helper()
	target := NewCPUTarget(tm, aux)
	m := &SimMethod{Target: target, New: newDrafter, Aux: len(aux) > 0}
	res := sched.Generate(target, m, sched.Options{}, &sched.Request{Ctx: context.Background(), Prompt: prompt,
		MaxNew: maxNew, Stop: tm.Cfg.EOS, K: k, FixedK: true})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	return res.Tokens, res.Metrics
}

// checkReplay decodes prompts by real speculative decoding through the scheduler and checks
// that the output is the target's plain greedy output and that Simulate counts the same
// acceptance from the reference alone.
func checkReplay(t *testing.T, tm *Llama, newDrafter func() SimDrafter, prompts [][]int, aux []int, maxNew int) spec.Metrics {
	t.Helper()
	refs, err := Reference(tm, prompts, maxNew, aux)
	if err != nil {
		t.Fatal(err)
	}
	var total spec.Metrics
	for _, k := range []int{1, 3, 8} {
		for i, p := range prompts {
			got, met := replay(t, tm, newDrafter, p, k, maxNew, aux)
			want := refs[i].Tokens[refs[i].Prompt:]
			if n := len(want); n > 0 && slices.Contains(tm.Cfg.EOS, want[n-1]) {
				want = want[:n-1]
			}
			d := newDrafter()
			if !slices.Equal(got, want) {
				t.Fatalf("%s k=%d prompt %d: speculative output %v, greedy %v", d.Name(), k, i, got, want)
			}
			sim := Simulate(d, refs[i:i+1], k, maxNew, tm.Cfg.MaxSeq, tm.Cfg.EOS)
			if sim.Steps != met.Steps || sim.EmittedTokens != met.EmittedTokens || !slices.Equal(sim.AcceptedPerPosition, met.AcceptedPerPosition) {
				t.Fatalf("%s k=%d prompt %d: simulated %+v, decoded %+v", d.Name(), k, i, sim, met)
			}
			if k == 8 {
				total.Add(met)
			}
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
// output, and Simulate's replay counts what real decoding counts; the target drafting for
// itself is accepted in full.
func TestReplayIsExact(t *testing.T) {
	tw, tm := simTarget(t)
	self := checkReplay(t, tm, func() SimDrafter { return NewSimDraftModel(tm) }, simPrompts, nil, 30)
	if self.EmittedTokens < 3*self.Steps {
		t.Errorf("the target drafting for itself: %d tokens in %d steps", self.EmittedTokens, self.Steps)
	}
	hc := tw.Cfg
	hc.HiddenDim = 40
	aux := []int{1, 2, 3}
	for _, kind := range []string{weights.EagleKind1, weights.EagleKind3} {
		w := ref.RandomEagle(kind, hc, tw.Cfg, 20, 5)
		var a []int
		if kind == weights.EagleKind3 {
			w.AuxLayerIDs, a = aux, aux
		}
		h, err := NewEagleHead(w, tm)
		if err != nil {
			t.Fatal(err)
		}
		checkReplay(t, tm, func() SimDrafter { return NewSimEagle(h, tm) }, simPrompts, a, 30)
	}
	md, err := NewSimMedusa(ref.RandomMedusa(4, 1, 32, 0, 6), tm)
	if err != nil {
		t.Fatal(err)
	}
	checkReplay(t, tm, func() SimDrafter { return md }, simPrompts, nil, 30)
}
