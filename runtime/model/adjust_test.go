package model

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/ref"
)

// Greedy decoding with logit bias and penalties on the device, verifying drafts (right and
// wrong) on the way, gives the tokens and logprobs of a reference that applies kernelref.Penalties
// to the reference model's logits one token at a time.
func TestStepProcessorsMatchRef(t *testing.T) {
	w := ref.RandomLlama(testConfigs[1], 9)
	m, err := New(testDevice(t), w, Options{PageSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	prompt := []int{1, 2, 3, 4, 5, 3}
	bias := map[int]float32{7: 2.5, 9: -100, 2: 1}
	smp := batch.Sampling{PresencePenalty: 0.3, FrequencyPenalty: 0.5, RepetitionPenalty: 1.4, LogitBias: bias, Logprobs: true, TopLogprobs: 3}
	pen := kernelref.Penalties{Presence: smp.PresencePenalty, Frequency: smp.FrequencyPenalty, Repetition: smp.RepetitionPenalty, Bias: bias}
	inPrompt := map[int]bool{}
	for _, tk := range prompt {
		inPrompt[tk] = true
	}
	const n = 14
	// The reference, one token at a time.
	st := ref.NewLlamaState(w)
	logits, _ := st.Forward(prompt)
	V := w.Cfg.Vocab
	row := logits[len(logits)-V:]
	var want []int
	var wantLp []float32
	var wantTop [][]int
	for len(want) < n {
		p := pen.Apply(row, inPrompt, want)
		tok := kernelref.Argmax(p)
		lp, top, _ := kernelref.Logprobs(p, tok, 3)
		want, wantLp, wantTop = append(want, tok), append(wantLp, lp), append(wantTop, top)
		row, _ = st.Forward([]int{tok})
	}
	if slices.Contains(want, 9) {
		t.Fatalf("reference emitted token 9, biased by -100: %v", want)
	}

	sess := m.NewSession()
	defer sess.Release()
	adj := batch.NewAdjustments(smp, prompt)
	rng := rand.New(rand.NewSource(2))
	var got []int
	var gotLp []batch.TokenLogprob
	tokens := prompt
	nd := 0
	for len(got) < n {
		outs, err := m.Step([]batch.SeqStep{{Seq: sess.seq, Tokens: tokens, NDraft: nd, Sample: true, Sampling: smp, Adj: adj.List()}})
		if err != nil {
			t.Fatal(err)
		}
		o := outs[0]
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		if len(o.Logprobs) != len(o.Tokens) {
			t.Fatalf("%d tokens, %d logprobs", len(o.Tokens), len(o.Logprobs))
		}
		sess.Truncate(sess.Len() - nd + len(o.Tokens) - 1)
		got, gotLp = append(got, o.Tokens...), append(gotLp, o.Logprobs...)
		adj.Generated(o.Tokens...)
		// Next: the last token and up to 3 drafts, the reference's (often repeats) or a wrong one.
		nd = min(rng.Intn(4), max(0, n-len(got)-1))
		tokens = []int{got[len(got)-1]}
		if len(got) < n {
			drafts := slices.Clone(want[len(got):min(n, len(got)+nd)])
			if len(drafts) > 0 && rng.Intn(3) == 0 {
				drafts[rng.Intn(len(drafts))] = rng.Intn(V)
			}
			tokens, nd = append(tokens, drafts...), len(drafts)
		}
	}
	if !slices.Equal(got[:n], want) {
		t.Fatalf("device %v, reference %v", got[:n], want)
	}
	for i := range want {
		l := gotLp[i]
		if d := l.Logprob - wantLp[i]; d > 1e-3 || d < -1e-3 {
			t.Errorf("token %d: logprob %g, reference %g", i, l.Logprob, wantLp[i])
		}
		ids := make([]int, len(l.Top))
		for k, tl := range l.Top {
			ids[k] = tl.Token
		}
		if !slices.Equal(ids, wantTop[i]) {
			t.Errorf("token %d: top %v, reference %v", i, ids, wantTop[i])
		}
	}
}
