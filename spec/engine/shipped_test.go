package engine

import (
	"slices"
	"testing"

	"github.com/wspec/wspec/spec"
)

// Every drafter the repository ships (spec/drafters/stories15M, made by
// spec/distill/recipe.sh) loads by its mode alone, and with exactly k drafts per step, for a k
// that fills each verify block (2, 3, 5 and 9 rows: k = 1, 2, 4, 8), leaves greedy output
// token-identical to plain decoding; each accepts a share of its drafts that only a trained
// drafter reaches (a random one accepts almost none). Drafts that leave a block part empty
// are TestStories15MSpeculativeGreedy's. Seeded sampling at 0.8 gives plain decoding's text,
// run after run, alone or beside another request.
func TestShippedDrafters(t *testing.T) {
	const prompt, n = "Once upon a time, there was a little fox who", 32
	plainEngine := stories(t, nil)
	plain := generate(t, plainEngine, prompt, GenerateOptions{MaxTokens: n})
	seeded := GenerateOptions{MaxTokens: n, Sampling: Sampling{Temperature: 0.8, Seed: 1}}
	plainSeeded := generate(t, plainEngine, prompt, seeded)
	for _, mode := range []string{"eagle3", "eagle", "medusa", "draft_model"} {
		t.Run(mode, func(t *testing.T) {
			e := stories(t, &spec.Config{Mode: mode, NumSpeculativeTokens: 8})
			for _, k := range []int{1, 2, 4, 8} {
				res := generate(t, e, prompt, GenerateOptions{MaxTokens: n, NumSpeculativeTokens: k, FixedSpeculation: true})
				if !slices.Equal(res.Tokens, plain.Tokens) {
					t.Fatalf("k=%d: %q\nplain: %q", k, res.Text, plain.Text)
				}
				m := res.Metrics
				if k == 1 {
					t.Logf("k=1: acceptance %.2f over %d drafts", m.AcceptanceRate(), m.DraftTokens)
					if m.DraftTokens == 0 || m.AcceptanceRate() < 0.25 {
						t.Errorf("k=1: %d drafts, acceptance %.2f: not a trained drafter", m.DraftTokens, m.AcceptanceRate())
					}
				}
			}
			// Seeded sampling: the drafter samples its drafts, the planner picks the draft
			// lengths, another request shares the steps; the text is plain decoding's.
			for i := range 3 {
				var other chan *Result
				if i == 2 {
					other = make(chan *Result, 1)
					go func() {
						other <- generate(t, e, "The little dog", GenerateOptions{MaxTokens: n, Sampling: Sampling{Temperature: 1, Seed: 3}})
					}()
				}
				res := generate(t, e, prompt, seeded)
				if other != nil {
					<-other
				}
				if res.Text != plainSeeded.Text {
					t.Errorf("seeded run %d: %q\nplain: %q", i, res.Text, plainSeeded.Text)
				}
				if i == 0 {
					t.Logf("seeded at 0.8: acceptance %.2f over %d drafts", res.Metrics.AcceptanceRate(), res.Metrics.DraftTokens)
				}
			}
		})
	}
}
