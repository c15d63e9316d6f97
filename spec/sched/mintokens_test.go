package sched_test

import (
	"context"
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/spec"
	. "github.com/wspec/wspec/spec/sched"
)

// MinNew holds the stop tokens back: the greedy text runs on past where the stop token was
// the likeliest, takes the runner-up there, and stops at the stop token's first appearance
// after MinNew; with speculation the tokens are the same (drafts never cross MinNew).
func TestMinNewHoldsStopsBack(t *testing.T) {
	w := ref.RandomLlama(loopCfg, 2)
	free := ref.Generate(w, loopPrompt, 60, kernelref.SamplingParams{}, 0, nil)
	stop := free[30]
	stopAt := slices.Index(free, stop)
	minNew := stopAt + 3
	var want []int
	for _, k := range []int{0, 3, 8} {
		var d spec.Method
		if k > 0 {
			d = ngram
		}
		m := ref.NewModel(w, 64, 8, refLimits)
		res := Generate(m, d, Options{}, &Request{Ctx: context.Background(), Prompt: loopPrompt, MaxNew: 60,
			Stop: []int{stop}, MinNew: minNew, K: k, FixedK: true})
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		got := res.Tokens
		switch {
		case len(got) < minNew:
			t.Fatalf("k=%d: %d tokens (%s), min %d", k, len(got), res.Finish, minNew)
		case slices.Contains(got[:minNew], stop):
			t.Fatalf("k=%d: stop token %d among the first %d: %v", k, stop, minNew, got)
		case !slices.Equal(got[:stopAt], free[:stopAt]) || got[stopAt] == stop:
			t.Fatalf("k=%d: %v, free run %v (stop %d at %d)", k, got, free, stop, stopAt)
		case res.Finish == spec.FinishStop && slices.Contains(got, stop):
			t.Fatalf("k=%d: the stop token is in the output %v", k, got)
		}
		if k == 0 {
			want = got
			t.Logf("free run stops at %d, min %d: %d tokens (%s)", stopAt, minNew, len(got), res.Finish)
		} else if !slices.Equal(got, want) {
			t.Errorf("k=%d: %v, without drafts %v", k, got, want)
		}
		if n := m.Pool().InUse(); n != 0 {
			t.Errorf("%d pages in use", n)
		}
	}
}

// Ban adds Banned to the stop tokens' logit bias while on and gives the bias back after.
func TestAdjustmentsBan(t *testing.T) {
	a := batch.NewAdjustments(batch.Sampling{LogitBias: map[int]float32{5: 2}}, nil)
	a.Ban([]int{5, 9}, true)
	bias := func() map[uint32]float32 {
		m := map[uint32]float32{}
		for _, e := range a.List() {
			m[e.Token] = e.Bias
		}
		return m
	}
	if b := bias(); b[5] != 2+batch.Banned || b[9] != batch.Banned {
		t.Fatalf("banned: %v", b)
	}
	a.Ban([]int{5, 9}, false)
	if b := bias(); b[5] != 2 || b[9] != 0 {
		t.Fatalf("after: %v", b)
	}
}
