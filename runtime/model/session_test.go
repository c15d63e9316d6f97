package model

import (
	"errors"
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kv"
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
	if _, err := s.Forward(long, 0, nil, batch.Sampling{}); !errors.Is(err, kv.ErrContextFull) {
		t.Fatalf("prompt over the context: want kv.ErrContextFull, got %v", err)
	}
	if _, err := s.Forward(make([]int, 40), 0, nil, batch.Sampling{}); !errors.Is(err, kv.ErrPoolExhausted) {
		t.Fatalf("40 tokens in 32 slots: want kv.ErrPoolExhausted, got %v", err)
	}
	if s.Len() != 0 || m.Pool().InUse() != 0 {
		t.Fatalf("failed steps left %d tokens, %d pages", s.Len(), m.Pool().InUse())
	}
	if _, err := s.Forward([]int{cfg.Vocab}, 0, nil, batch.Sampling{}); !errors.Is(err, batch.ErrBadInput) {
		t.Fatalf("token id = vocab: want batch.ErrBadInput, got %v", err)
	}
	if _, err := s.Forward([]int{1, 2}, 2, nil, batch.Sampling{}); !errors.Is(err, batch.ErrBadInput) {
		t.Fatalf("all tokens drafts: want batch.ErrBadInput, got %v", err)
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
		if _, err := m.NewSession().Forward([]int{1, 2, 3}, 0, nil, batch.Sampling{}); err != nil {
			t.Fatal(err)
		}
		m.Release()
		m.Release()
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestSharedPrefixPages: a sequence that takes another's registered prompt pages from the
// prefix cache (sharing them on the device) and goes on with tokens of its own computes what
// the reference computes for its whole sequence, as does the first, which goes on too.
func TestSharedPrefixPages(t *testing.T) {
	d := testDevice(t)
	cfg := testConfigs[1]
	w := randomWeights(cfg)
	m, err := New(d, w, Options{PageSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	m.Pool().EnablePrefixCaching()
	prompt := []int{5, 4, 3, 2, 1, 9, 8, 7, 6, 10, 11} // 11 tokens: two full pages of 4
	a := m.NewSession()
	if _, err := a.Forward(prompt, 0, nil, batch.Sampling{}); err != nil {
		t.Fatal(err)
	}
	a.seq.Register(prompt)
	b := m.NewSession()
	if n := b.seq.MatchPrefix(prompt, len(prompt)-1); n != 8 || b.seq.Pages()[1] != a.seq.Pages()[1] {
		t.Fatalf("matched %d tokens, pages %v and %v", n, a.seq.Pages(), b.seq.Pages())
	}
	if m.Pool().InUse() != 3 {
		t.Fatalf("sharing allocated pages: %d in use", m.Pool().InUse())
	}
	next := [][]int{{20, 21}, append(slices.Clone(prompt[8:]), 30, 31, 32)}
	for i, s := range []*Session{a, b} {
		if _, err := s.Forward(next[i], 0, nil, batch.Sampling{}); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range []*Session{a, b} {
		if _, err := s.Forward([]int{40}, 0, nil, batch.Sampling{}); err != nil {
			t.Fatal(err)
		}
		got, err := m.Logits(1)
		if err != nil {
			t.Fatal(err)
		}
		full := append(append(slices.Clone(prompt[:8*i+len(prompt)*(1-i)]), next[i]...), 40)
		st := ref.NewLlamaState(w)
		want, _ := st.Forward(full)
		want = want[(len(full)-1)*cfg.Vocab:]
		if e, at := maxRelErr(got, want); e > 2e-4 {
			t.Fatalf("session %d: logits off by %.2g at %d", i, e, at)
		}
	}
	a.Release()
	b.Release()
	if m.Pool().InUse() != 0 {
		t.Fatalf("%d pages in use after both released (the cached ones are free to take)", m.Pool().InUse())
	}
}

// DecodeChains gives the tokens of greedy decoding one step at a time, and leaves the cache as
// they do, for chains of 1 to 9 tokens fed 1 to 3 tokens first, across page boundaries, all
// run together (every sequence's chain length its own); chains fed one token each take one
// submit; refused chains change nothing.
func TestDecodeChainsMatchSteps(t *testing.T) {
	w := ref.RandomLlama(testConfigs[1], 4)
	d := testDevice(t)
	m, err := New(d, w, Options{PageSize: 4, Pages: 400})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	prompt := []int{3, 1, 4, 1, 5}
	want := decodeAlone(t, m, prompt, 20, batch.Sampling{})
	for _, feeds := range [][]int{{1}, {1, 2, 3}} {
		var chains []Chain
		var sess []*Session
		var js []int
		for fi, feed := range feeds {
			for k := 1; k <= 9; k += 2 {
				a := m.NewSession()
				// The cache holds prompt and want[:j-feed], then feeds the next feed tokens.
				j := 3 + (fi+k)%3
				ctx := append(slices.Clone(prompt), want[:j]...)
				if _, err := a.Forward(ctx[:len(ctx)-feed], 0, nil, batch.Sampling{}); err != nil {
					t.Fatal(err)
				}
				chains = append(chains, Chain{Seq: a.seq, Tokens: ctx[len(ctx)-feed:], K: k})
				sess, js = append(sess, a), append(js, j)
			}
		}
		submits := d.Submits()
		if err := m.DecodeChains(chains); err != nil {
			t.Fatal(err)
		}
		if n := d.Submits() - submits; len(feeds) == 1 && n != 1 {
			t.Errorf("%d chains fed one token each took %d submits", len(chains), n)
		}
		for i, c := range chains {
			a, j, k := sess[i], js[i], c.K
			if !slices.Equal(c.Out, want[j:j+k]) {
				t.Errorf("feed %d k %d: chain %v, steps %v", len(c.Tokens), k, c.Out, want[j:j+k])
			}
			if a.Len() != len(prompt)+j+k-1 {
				t.Errorf("feed %d k %d: %d tokens cached, want %d", len(c.Tokens), k, a.Len(), len(prompt)+j+k-1)
			}
			// The cache is right: one more step gives the next token.
			next, err := a.Forward(c.Out[k-1:], 0, nil, batch.Sampling{})
			if err != nil {
				t.Fatal(err)
			}
			if next[0] != want[j+k] {
				t.Errorf("feed %d k %d: after the chain %d, want %d", len(c.Tokens), k, next[0], want[j+k])
			}
			a.Release()
		}
	}
	a := m.NewSession()
	defer a.Release()
	for _, k := range []int{0, MaxChain + 1} {
		if err := m.DecodeChains([]Chain{{Seq: a.seq, Tokens: []int{1}, K: k}}); !errors.Is(err, batch.ErrBadInput) || a.Len() != 0 {
			t.Errorf("chain of %d: %v, %d tokens cached", k, err, a.Len())
		}
	}
	if err := m.DecodeChains([]Chain{{Seq: a.seq, Tokens: make([]int, m.Cfg.MaxSeq-2), K: 4}}); !errors.Is(err, kv.ErrContextFull) || a.Len() != 0 {
		t.Errorf("chain past the context: %v, %d tokens cached", err, a.Len())
	}
	if m.Pool().InUse() != 0 {
		t.Errorf("%d pages in use after the refusals", m.Pool().InUse())
	}
}

// TestBenchVerify: each draft count is timed (k = 0 added), the plain step is the ratios' unit,
// the cache is left as the prompt left it, and a step past the context is refused up front.
func TestBenchVerify(t *testing.T) {
	cfg := testConfigs[2] // MaxSeq 64
	m, err := New(testDevice(t), randomWeights(cfg), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	v, err := m.BenchVerify([]int{1, 2, 3}, []int{2, 4}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 3 || v[0].K != 0 || v[0].Ratio != 1 || v[1].K != 2 || v[2].K != 4 || v[2].Step <= 0 {
		t.Fatalf("costs %+v", v)
	}
	if m.Pool().InUse() != 0 {
		t.Fatalf("%d pages left in use", m.Pool().InUse())
	}
	if _, err := m.BenchVerify(make([]int, 60), []int{8}, 1); err == nil {
		t.Fatal("8 drafts after 60 tokens in a context of 64: no error")
	}
}
