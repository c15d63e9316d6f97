package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/sched"
)

// With the prefix cache (the default), a chat's later turns, which resend the earlier ones,
// take the earlier turns' pages from the cache, and every output (greedy and seeded, with
// speculation) is the output without the cache; the n choices of one prompt, run at once,
// compute the prompt once.
func TestPrefixCacheExact(t *testing.T) {
	var cached, prefill int
	sc := &spec.Config{Mode: "ngram", NumSpeculativeTokens: 4}
	with, err := Load(storiesDir, Options{Device: testDevice(t), Speculative: sc,
		OnStep: func(st sched.StepInfo) { cached += st.CachedTokens; prefill += st.PrefillRows }})
	if err != nil {
		t.Fatal(err)
	}
	defer with.Close()
	without, err := Load(storiesDir, Options{Device: testDevice(t), Speculative: sc, NoPrefixCaching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer without.Close()
	for _, o := range []GenerateOptions{{MaxTokens: 24}, {MaxTokens: 24, Sampling: Sampling{Temperature: 0.8, TopP: 0.9, Seed: 5}}} {
		chat := "Once upon a time, there was a little girl named Lily. She loved to play outside in the park."
		for turn := range 3 {
			a, b := generate(t, with, chat, o), generate(t, without, chat, o)
			if !slices.Equal(a.Tokens, b.Tokens) {
				t.Fatalf("turn %d (%+v): with the cache %q, without %q", turn, o.Sampling, a.Text, b.Text)
			}
			chat += a.Text + " Then"
		}
	}
	if cached == 0 {
		t.Fatal("the later turns took nothing from the prefix cache")
	}
	// Four choices at once: the prompt's whole pages are computed once.
	r, err := with.NewRequest(context.Background(), Prompt{Text: "One day, a big bear found a shiny red ball in the forest. He wanted to play with it, so he"}, GenerateOptions{MaxTokens: 8,
		Sampling: Sampling{Temperature: 1, Seed: 3}})
	if err != nil {
		t.Fatal(err)
	}
	cached, prefill = 0, 0
	done := make(chan *Result, 4)
	for i := range 4 {
		go func() {
			res, err := with.Run(context.Background(), r.WithChoice(i, nil))
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
	}
	for range 4 {
		<-done
	}
	P := len(r.Prompt)
	whole := (P - 1) / 16 * 16
	t.Logf("n = 4 of a %d-token prompt: %d prompt rows computed, %d tokens from the cache", P, prefill, cached)
	if prefill != P+3*(P-whole) || cached != 3*whole {
		t.Errorf("n = 4: %d prompt rows computed and %d cached, want %d and %d", prefill, cached, P+3*(P-whole), 3*whole)
	}
}
