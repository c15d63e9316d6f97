package model

import (
	"errors"
	"math/rand"
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kv"
	"github.com/wspec/wspec/runtime/ref"
)

// decodeAlone decodes n tokens after prompt for one sequence by itself, one token per step.
func decodeAlone(t *testing.T, m *Model, prompt []int, n int, s batch.Sampling) []int {
	t.Helper()
	sess := m.NewSession()
	defer sess.Release()
	out, err := sess.Forward(prompt, 0, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	got := []int{out[0]}
	for len(got) < n {
		if out, err = sess.Forward(out[:1], 0, nil, s); err != nil {
			t.Fatal(err)
		}
		got = append(got, out[0])
	}
	return got
}

// Sequences of different prompt lengths, decoded together in batched steps (their prompts in
// one step, then one token each per step, greedy steps verifying ragged drafts: right, wrong
// or none), give exactly the tokens each gives alone, greedy and seeded sampling alike; the
// pages come back.
func TestStepBatchMatchesAlone(t *testing.T) {
	w := ref.RandomLlama(testConfigs[1], 3)
	m, err := New(testDevice(t), w, Options{PageSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	rng := rand.New(rand.NewSource(5))
	prompts := [][]int{{1, 2, 3}, {4}, {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {16, 17}}
	const n = 12
	for _, smp := range []batch.Sampling{{}, {Temperature: 0.9, TopP: 0.95, Seed: 11}} {
		want := make([][]int, len(prompts))
		for i, p := range prompts {
			s := smp
			s.Choice = uint32(i)
			want[i] = decodeAlone(t, m, p, n, s)
		}
		sessions := make([]*Session, len(prompts))
		got := make([][]int, len(prompts))
		steps := make([]batch.SeqStep, len(prompts))
		for i, p := range prompts {
			sessions[i] = m.NewSession()
			s := smp
			s.Choice = uint32(i)
			steps[i] = batch.SeqStep{Seq: sessions[i].seq, Tokens: p, Sample: true, Sampling: s}
		}
		for step := 0; ; step++ {
			outs, err := m.Step(steps)
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range outs {
				if o.Err != nil {
					t.Fatal(o.Err)
				}
				st := steps[i]
				accepted := len(o.Tokens) - 1
				sessions[i].Truncate(st.Seq.Len() - st.NDraft + accepted)
				got[i] = append(got[i], o.Tokens...)
			}
			done := true
			for i := range steps {
				last := got[i][len(got[i])-1]
				// Drafts: on odd steps up to 3 for some sequences, the right tokens (from the
				// run alone) or a wrong one; none on even steps.
				// (Sampled drafts change which draws make the tokens, not their distribution:
				// greedy only, so that alone and batched compare token for token.)
				var drafts []int
				if k := min(rng.Intn(4), n-len(got[i])-1); smp.Temperature == 0 && step%2 == 1 && k > 0 && i != 1 {
					drafts = slices.Clone(want[i][len(got[i]) : len(got[i])+k])
					if rng.Intn(3) == 0 {
						drafts[rng.Intn(k)] = rng.Intn(w.Cfg.Vocab)
					}
				}
				steps[i].Tokens, steps[i].NDraft = append([]int{last}, drafts...), len(drafts)
				done = done && len(got[i]) >= n
			}
			if done {
				break
			}
		}
		for i := range prompts {
			if !slices.Equal(got[i][:n], want[i]) {
				t.Errorf("%+v sequence %d: batched %v, alone %v", smp, i, got[i][:n], want[i])
			}
			sessions[i].Release()
		}
		if m.Pool().InUse() != 0 {
			t.Fatalf("%d pages in use", m.Pool().InUse())
		}
	}
}

// A batch the step cannot run is refused before anything changes: a sequence twice, too
// many rows, more pages than are free, drafts without sampling.
func TestStepRefusals(t *testing.T) {
	cfg := testConfigs[2] // MaxSeq 64
	m, err := New(testDevice(t), ref.RandomLlama(cfg, 1), Options{PageSize: 8, Pages: 4, PrefillChunk: 32, MaxSeqs: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	a, b := m.NewSession(), m.NewSession()
	if _, err := a.Forward([]int{1, 2, 3}, 0, nil, batch.Sampling{}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		steps []batch.SeqStep
		want  error
	}{
		{"twice", []batch.SeqStep{{Seq: a.seq, Tokens: []int{1}, Sample: true}, {Seq: a.seq, Tokens: []int{2}, Sample: true}}, batch.ErrBadInput},
		{"rows", []batch.SeqStep{{Seq: a.seq, Tokens: make([]int, 20), Sample: true}, {Seq: b.seq, Tokens: make([]int, 20), Sample: true}}, batch.ErrBadInput},
		{"pages", []batch.SeqStep{{Seq: a.seq, Tokens: make([]int, 20), Sample: true}, {Seq: b.seq, Tokens: make([]int, 12), Sample: true}}, kv.ErrPoolExhausted},
		{"drafts without sampling", []batch.SeqStep{{Seq: b.seq, Tokens: []int{1, 2}, NDraft: 1}}, batch.ErrBadInput},
		{"sequences", []batch.SeqStep{{Seq: a.seq, Tokens: []int{1}}, {Seq: b.seq, Tokens: []int{1}}, {Seq: m.NewSession().seq, Tokens: []int{1}}, {Seq: m.NewSession().seq, Tokens: []int{1}}}, batch.ErrBadInput},
		{"q without DraftQ", []batch.SeqStep{{Seq: a.seq, Tokens: []int{1, 2}, NDraft: 1, Sample: true, Q: make([]float32, cfg.Vocab)}}, batch.ErrBadInput},
	}
	for _, tc := range cases {
		inUse, lenA := m.Pool().InUse(), a.Len()
		if _, err := m.Step(tc.steps); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
		if m.Pool().InUse() != inUse || a.Len() != lenA || b.Len() != 0 {
			t.Errorf("%s: the refused step changed the caches", tc.name)
		}
	}
	// The drafts' distributions take room only in a model made for a drafter that returns them.
	if m.q.Size > 16 {
		t.Errorf("q buffer of %d bytes without DraftQ", m.q.Size)
	}
	withQ, err := New(testDevice(t), ref.RandomLlama(cfg, 1), Options{PageSize: 8, Pages: 4, PrefillChunk: 32, MaxSeqs: 3, DraftQ: true})
	if err != nil {
		t.Fatal(err)
	}
	defer withQ.Release()
	if want := uint64(4 * withQ.Opts.MaxLogitRows * cfg.Vocab); withQ.q.Size != want {
		t.Errorf("q buffer of %d bytes with DraftQ, want %d", withQ.q.Size, want)
	}
}
