package sched_test

import (
	"slices"
	"testing"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/runtime/kernelref"
	"github.com/wspec/wspec/runtime/ref"
	"github.com/wspec/wspec/spec"
	. "github.com/wspec/wspec/spec/sched"
)

// Suffix decoding is exact as every drafter is: greedy tokens equal plain decoding's for every
// k, seeded sampling gives the seed's tokens; and it drafts, from the sequence's own text, and
// more after an earlier sequence left its output in the global tree.
func TestSuffixExact(t *testing.T) {
	tied := loopCfg
	tied.TieEmbed = true
	w := ref.RandomLlama(tied, 11)
	cfg := spec.Config{Mode: "suffix", NumSpeculativeTokens: 8}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	const n = 60
	want := ref.Generate(w, loopPrompt, n, kernelref.SamplingParams{}, 0, nil)
	for k := 1; k <= spec.MaxSpeculativeTokens; k++ {
		method := spec.NewSuffix(cfg)
		first := generate(t, w, method, loopPrompt, k, n, batch.Sampling{}, nil)
		again := generate(t, w, method, loopPrompt, k, n, batch.Sampling{}, nil)
		for _, r := range []Result{first, again} {
			if !slices.Equal(r.Tokens, want) {
				t.Fatalf("k=%d: suffix %v\nplain %v", k, r.Tokens, want)
			}
		}
		if k == 8 {
			t.Logf("k=8: accepted %d of %d drafts alone, %d of %d with the first run's output in the global tree",
				first.Metrics.AcceptedTokens, first.Metrics.DraftTokens, again.Metrics.AcceptedTokens, again.Metrics.DraftTokens)
			if first.Metrics.AcceptedTokens == 0 || again.Metrics.AcceptedTokens <= first.Metrics.AcceptedTokens {
				t.Errorf("suffix drafts accepted: %d alone, %d the second time (want some, then more)", first.Metrics.AcceptedTokens, again.Metrics.AcceptedTokens)
			}
		}
	}
	w2 := ref.RandomLlama(loopCfg, 5)
	s := batch.Sampling{Temperature: 1, TopP: 0.95, Seed: 123456789}
	plain := generate(t, w2, nil, loopPrompt, 0, 40, s, nil).Tokens
	if got := generate(t, w2, spec.NewSuffix(cfg), loopPrompt, 6, 40, s, nil).Tokens; !slices.Equal(got, plain) {
		t.Fatalf("seeded sampling with suffix drafts %v, without %v", got, plain)
	}
}
