package model

import (
	"math"
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/ref"
)

// A step that scores its drafts (a prompt scored in chunks, each with the next chunk's first
// token as its last draft) returns every draft's logprob and top tokens, those after the
// first rejected draft included, as the reference's log-softmax of each position's logits.
func TestStepScoresMatchRef(t *testing.T) {
	w := ref.RandomLlama(testConfigs[1], 4)
	m, err := New(testDevice(t), w, Options{PageSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	prompt := []int{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9}
	V := w.Cfg.Vocab
	logits, _ := ref.NewLlamaState(w).Forward(prompt)

	sess := m.NewSession()
	defer sess.Release()
	smp := batch.Sampling{Logprobs: true, TopLogprobs: 4}
	var got []batch.TokenLogprob
	for fed := 0; fed < len(prompt)-1; {
		n := min(m.Opts.MaxDraft, len(prompt)-1-fed) // rows scored this step
		outs, err := m.Step([]batch.SeqStep{{Seq: sess.seq, Tokens: prompt[fed : fed+n+1], NDraft: n, Sample: true, Score: true, Sampling: smp}})
		if err != nil {
			t.Fatal(err)
		}
		if outs[0].Err != nil {
			t.Fatal(outs[0].Err)
		}
		if len(outs[0].Scores) != n {
			t.Fatalf("%d scores for %d drafts", len(outs[0].Scores), n)
		}
		got = append(got, outs[0].Scores...)
		fed += n
		sess.Truncate(fed)
	}
	for i, g := range got {
		lp, top, tlp := kernelref.Logprobs(logits[i*V:(i+1)*V], prompt[i+1], 4)
		if math.Abs(float64(g.Logprob-lp)) > 1e-3 {
			t.Errorf("token %d: logprob %g, reference %g", i+1, g.Logprob, lp)
		}
		if r := kernelref.Rank(logits[i*V:(i+1)*V], prompt[i+1]); g.Rank != r {
			t.Errorf("token %d: rank %d, reference %d", i+1, g.Rank, r)
		}
		ids := make([]int, len(g.Top))
		for k, tl := range g.Top {
			ids[k] = tl.Token
			if math.Abs(float64(tl.Logprob-tlp[k])) > 1e-3 {
				t.Errorf("token %d: top %d logprob %g, reference %g", i+1, k, tl.Logprob, tlp[k])
			}
		}
		if !slices.Equal(ids, top) {
			t.Errorf("token %d: top %v, reference %v", i+1, ids, top)
		}
	}
	if _, err := m.Step([]batch.SeqStep{{Seq: sess.seq, Tokens: []int{1, 2}, NDraft: 1, Sample: true, Score: true}}); err == nil {
		t.Error("a scoring step without logprobs was taken")
	}
}
