package sched_test

import (
	"context"
	"math"
	"regexp"
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/spec"
	. "github.com/wspec/wspec/spec/sched"
	"github.com/wspec/wspec/spec/sched/schedtest"
)

// Scored prompts, batched beside plain requests with the same prompt (prefix caching on, and
// a pool small enough to preempt), get each prompt token's logprob and top tokens as the
// reference's log-softmax of the position before it; scoring alone (MaxNew 0) generates
// nothing, and scoring then generating gives the tokens of the same request unscored.
func TestScorePromptBatched(t *testing.T) {
	w := ref.RandomLlama(loopCfg, 6)
	prompt := append(slices.Clone(loopPrompt), 3, 8, 13, 21, 34, 55, 89, 144, 33, 177, 10, 2)
	V := loopCfg.Vocab
	logits, _ := ref.NewLlamaState(w).Forward(prompt)
	smp := batch.Sampling{Temperature: 0.8, Seed: 5}
	for _, pages := range []int{64, 9} {
		m := ref.NewModel(w, pages, 8, refLimits)
		m.Pool().EnablePrefixCaching()
		reqs := []*Request{
			{Prompt: prompt, MaxNew: 12, Sampling: smp},
			{Prompt: prompt, MaxNew: 0, ScorePrompt: true, PromptTop: 3},
			{Prompt: prompt, MaxNew: 12, Sampling: smp, ScorePrompt: true, K: 3, FixedK: true},
			{Prompt: prompt[:1], MaxNew: 0, ScorePrompt: true},
		}
		s := New(m, ngram, Options{})
		var chans []<-chan Result
		for _, r := range reqs {
			r.Ctx = context.Background()
			chans = append(chans, s.Submit(r))
		}
		go s.Run()
		res := make([]Result, len(chans))
		for i, c := range chans {
			res[i] = <-c
			if res[i].Err != nil {
				t.Fatalf("pages %d, request %d: %v", pages, i, res[i].Err)
			}
		}
		s.Close()
		if len(res[1].Tokens) != 0 || res[1].Finish != spec.FinishLength || len(res[3].PromptLogprobs) != 0 || res[3].Finish != spec.FinishLength {
			t.Errorf("pages %d: scoring alone gave %v (%s) and %d scores (%s)", pages, res[1].Tokens, res[1].Finish, len(res[3].PromptLogprobs), res[3].Finish)
		}
		if !slices.Equal(res[2].Tokens, res[0].Tokens) || len(res[0].Tokens) != 12 {
			t.Errorf("pages %d: scored then generated %v, unscored %v", pages, res[2].Tokens, res[0].Tokens)
		}
		for _, r := range res[1:3] {
			if len(r.PromptLogprobs) != len(prompt)-1 {
				t.Fatalf("pages %d: %d prompt logprobs for %d tokens", pages, len(r.PromptLogprobs), len(prompt))
			}
			for i, g := range r.PromptLogprobs {
				lp, top, _ := kernelref.Logprobs(logits[i*V:(i+1)*V], prompt[i+1], 3)
				if math.Abs(float64(g.Logprob-lp)) > 1e-4 {
					t.Errorf("pages %d: token %d logprob %g, reference %g", pages, i+1, g.Logprob, lp)
				}
				if r := kernelref.Rank(logits[i*V:(i+1)*V], prompt[i+1]); g.Rank != r {
					t.Errorf("pages %d: token %d rank %d, reference %d", pages, i+1, g.Rank, r)
				}
				var ids []int
				for _, tl := range g.Top {
					ids = append(ids, tl.Token)
				}
				if len(ids) > 0 && !slices.Equal(ids, top) {
					t.Errorf("pages %d: token %d top %v, reference %v", pages, i+1, ids, top)
				}
			}
		}
		if len(res[1].PromptLogprobs[0].Top) != 3 || len(res[2].PromptLogprobs[0].Top) != 0 {
			t.Errorf("pages %d: top lists of %d and %d, want 3 and 0", pages, len(res[1].PromptLogprobs[0].Top), len(res[2].PromptLogprobs[0].Top))
		}
		if n := m.Pool().InUse(); n != 0 {
			t.Errorf("pages %d: %d pages in use after the requests", pages, n)
		}
		t.Logf("pages %d: preempted %d, %d, %d", pages, res[0].Preempted, res[1].Preempted, res[2].Preempted)
	}
}

// A request under a grammar scores its prompt unmasked (the prompt is not the output, and
// leaves the grammar here), then generates under the grammar.
func TestScorePromptUnderGrammar(t *testing.T) {
	w := schedtest.DistWeights()
	V := schedtest.DistConfig.Vocab
	prompt := schedtest.DistPrompt
	logits, _ := ref.NewLlamaState(w).Forward(prompt)
	m := ref.NewModel(w, 64, 8, refLimits)
	res := Generate(m, nil, Options{}, &Request{Ctx: context.Background(), Prompt: prompt, MaxNew: 4,
		Sampling: batch.Sampling{Temperature: 1, Seed: 3}, ScorePrompt: true, Grammar: schedtest.DistGrammar().NewMatcher()})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if len(res.PromptLogprobs) != len(prompt)-1 {
		t.Fatalf("%d prompt logprobs for %d tokens", len(res.PromptLogprobs), len(prompt))
	}
	for i, g := range res.PromptLogprobs {
		if lp, _, _ := kernelref.Logprobs(logits[i*V:(i+1)*V], prompt[i+1], 0); math.Abs(float64(g.Logprob-lp)) > 1e-4 {
			t.Errorf("token %d: logprob %g, the unmasked reference %g", i+1, g.Logprob, lp)
		}
	}
	var text string
	for _, tok := range res.Tokens {
		text += schedtest.DistPieces[tok]
	}
	if !regexp.MustCompile(`^(a[bc])*a?$`).MatchString(text) {
		t.Errorf("generated %q outside the grammar", text)
	}
}
