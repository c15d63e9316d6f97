package sched

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/spec"
)

// seenSampling is the oracle drafter, noting the Sampling of every proposal it is given,
// by the first token of the proposal's context (each test request's prompt starts apart).
type seenSampling struct {
	oracle
	mu   sync.Mutex
	seen map[int][]batch.Sampling
}

func (s *seenSampling) NewDrafter() (spec.Drafter, error) { return s.oracle, nil }
func (s *seenSampling) Propose(ps []spec.Proposal) error {
	s.mu.Lock()
	for _, p := range ps {
		s.seen[p.Ctx[0]] = append(s.seen[p.Ctx[0]], p.Sampling)
	}
	s.mu.Unlock()
	return s.oracle.Propose(ps)
}

// A request with OneHotDrafts has its drafter asked for argmax drafts (temperature 0) while
// its own rows sample at its temperature; a request beside it without the option passes its
// temperature on to the drafter. Both generate their exact continuation.
func TestOneHotDraftsAskGreedyDrafts(t *testing.T) {
	m := &seenSampling{oracle: oracle{wrongAt: -1}, seen: map[int][]batch.Sampling{}}
	s := batch.Sampling{Temperature: 0.8, Seed: 7}
	reqs := []*Request{
		{Ctx: context.Background(), Prompt: []int{1, 2, 3}, MaxNew: 9, Sampling: s, K: 3, FixedK: true, OneHotDrafts: true},
		{Ctx: context.Background(), Prompt: []int{2, 5, 8}, MaxNew: 9, Sampling: s, K: 3, FixedK: true},
	}
	got := runFake(t, newFakeTarget(16, 4), m, reqs)
	for i, r := range got {
		if r.Err != nil || !slices.Equal(r.Tokens, want(reqs[i].Prompt, reqs[i].MaxNew)) {
			t.Fatalf("request %d: %v, %v", i, r.Tokens, r.Err)
		}
	}
	for first, wantT := range map[int]float32{1: 0, 2: 0.8} {
		seen := m.seen[first]
		if len(seen) == 0 {
			t.Fatalf("prompt %d: no proposals", first)
		}
		for _, p := range seen {
			if p.Temperature != wantT || p.Seed != 7 {
				t.Errorf("prompt %d: a proposal sampled at %+v, want temperature %g, seed 7", first, p, wantT)
			}
		}
	}
}
