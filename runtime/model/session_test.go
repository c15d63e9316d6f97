package model

import (
	"errors"
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/ref"
)

// TestForwardErrors: a prompt longer than the context, an exhausted pool and bad token ids are
// clear errors, and a failed step leaves the sequence as it was.
func TestForwardErrors(t *testing.T) {
	d := testDevice(t)
	cfg := testConfigs[2]                                                // MaxSeq 64
	m, err := New(d, randomWeights(cfg), Options{PageSize: 8, Pages: 4}) // 32 slots
	if err != nil {
		t.Fatal(err)
	}
	s := m.NewSession()
	long := make([]int, cfg.MaxSeq+1)
	if _, err := s.Forward(long, 0, nil, Sampling{}); !errors.Is(err, runtime.ErrContextFull) {
		t.Fatalf("prompt over the context: want runtime.ErrContextFull, got %v", err)
	}
	if _, err := s.Forward(make([]int, 40), 0, nil, Sampling{}); !errors.Is(err, runtime.ErrPoolExhausted) {
		t.Fatalf("40 tokens in 32 slots: want runtime.ErrPoolExhausted, got %v", err)
	}
	if s.Len() != 0 || m.Pool.InUse() != 0 {
		t.Fatalf("failed steps left %d tokens, %d pages", s.Len(), m.Pool.InUse())
	}
	if _, err := s.Forward([]int{cfg.Vocab}, 0, nil, Sampling{}); !errors.Is(err, ErrBadInput) {
		t.Fatalf("token id = vocab: want ErrBadInput, got %v", err)
	}
	if _, err := s.Forward([]int{1, 2}, 2, nil, Sampling{}); !errors.Is(err, ErrBadInput) {
		t.Fatalf("all tokens drafts: want ErrBadInput, got %v", err)
	}
}

// TestModelRelease: a released model frees its buffers (twice is harmless) and the device
// goes on serving a new model.
func TestModelRelease(t *testing.T) {
	d := testDevice(t)
	w := randomWeights(testConfigs[0])
	for i := 0; i < 2; i++ {
		m, err := New(d, w, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.NewSession().Forward([]int{1, 2, 3}, 0, nil, Sampling{}); err != nil {
			t.Fatal(err)
		}
		m.Release()
		m.Release()
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestForkedSessionsDiverge: two sessions forked after a prompt whose length is not a page
// multiple continue with different tokens; each one's logits match the reference forward of
// its own sequence, so the shared last page was copied before either wrote into it.
func TestForkedSessionsDiverge(t *testing.T) {
	d := testDevice(t)
	cfg := testConfigs[1]
	w := randomWeights(cfg)
	m, err := New(d, w, Options{PageSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int{5, 4, 3, 2, 1, 9, 8, 7, 6, 10, 11} // 11 tokens: the second page is shared half full
	a := m.NewSession()
	if _, err := a.Forward(prompt, 0, nil, Sampling{}); err != nil {
		t.Fatal(err)
	}
	b := a.Fork()
	if m.Pool.InUse() != 2 {
		t.Fatalf("fork allocated pages: %d in use", m.Pool.InUse())
	}
	for i, next := range [][]int{{20, 21}, {30, 31, 32}} {
		s := []*Session{a, b}[i]
		if _, err := s.Forward(next, 0, nil, Sampling{}); err != nil {
			t.Fatal(err)
		}
	}
	for i, next := range [][]int{{20, 21}, {30, 31, 32}} {
		s := []*Session{a, b}[i]
		if _, err := s.Forward([]int{40}, 0, nil, Sampling{}); err != nil {
			t.Fatal(err)
		}
		got, err := m.Logits(1)
		if err != nil {
			t.Fatal(err)
		}
		st := ref.NewLlamaState(w)
		full := append(append(append([]int{}, prompt...), next...), 40)
		want, _ := st.Forward(full)
		want = want[(len(full)-1)*cfg.Vocab:]
		if e, at := maxRelErr(got, want); e > 2e-4 {
			t.Fatalf("session %d: logits off by %.2g at %d", i, e, at)
		}
	}
	a.Release()
	b.Release()
	if m.Pool.InUse() != 0 {
		t.Fatalf("%d pages leaked", m.Pool.InUse())
	}
}

// DecodeChain gives the tokens of greedy decoding one step at a time, and leaves the cache as
// they do, for chains from 1 to 9 tokens, fed 1 to 3 tokens first, across page boundaries;
// refused chains change nothing.
func TestDecodeChainMatchesSteps(t *testing.T) {
	w := ref.RandomLlama(testConfigs[1], 4)
	m, err := New(testDevice(t), w, Options{PageSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	prompt := []int{3, 1, 4, 1, 5}
	want := decodeAlone(t, m, prompt, 20, Sampling{})
	for _, feed := range []int{1, 2, 3} {
		for k := 1; k <= 9; k += 2 {
			a := m.NewSession()
			// The cache holds prompt and want[:j-feed], then feeds the next feed tokens.
			j := 4
			ctx := append(slices.Clone(prompt), want[:j]...)
			if _, err := a.Forward(ctx[:len(ctx)-feed], 0, nil, Sampling{}); err != nil {
				t.Fatal(err)
			}
			got, err := a.DecodeChain(ctx[len(ctx)-feed:], k)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want[j:j+k]) {
				t.Errorf("feed %d k %d: chain %v, steps %v", feed, k, got, want[j:j+k])
			}
			if a.Len() != len(ctx)+k-1 {
				t.Errorf("feed %d k %d: %d tokens cached, want %d", feed, k, a.Len(), len(ctx)+k-1)
			}
			// The cache is right: one more step gives the next token.
			next, err := a.Forward(got[k-1:], 0, nil, Sampling{})
			if err != nil {
				t.Fatal(err)
			}
			if next[0] != want[j+k] {
				t.Errorf("feed %d k %d: after the chain %d, want %d", feed, k, next[0], want[j+k])
			}
			a.Release()
		}
	}
	a := m.NewSession()
	defer a.Release()
	for _, k := range []int{0, MaxChain + 1} {
		if _, err := a.DecodeChain([]int{1}, k); !errors.Is(err, ErrBadInput) || a.Len() != 0 {
			t.Errorf("chain of %d: %v, %d tokens cached", k, err, a.Len())
		}
	}
	if _, err := a.DecodeChain(make([]int, m.Cfg.MaxSeq-2), 4); !errors.Is(err, runtime.ErrContextFull) || a.Len() != 0 {
		t.Errorf("chain past the context: %v, %d tokens cached", err, a.Len())
	}
	if m.Pool.InUse() != 0 {
		t.Errorf("%d pages in use after the refusals", m.Pool.InUse())
	}
}
