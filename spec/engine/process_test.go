package engine

import (
	"math"
	"slices"
	"testing"

	"github.com/wspec/wspec/spec"
)

// The logits processors and logprobs on stories15M: a penalty or a bias changes greedy text
// the way it should (a -100 bias bans a token, the repetition penalty repeats less), gives
// the same tokens and logprobs with the ngram drafter verifying as without it, and each
// logprob is its position's likeliest when greedy.
func TestStories15MProcessors(t *testing.T) {
	e := stories(t, &spec.Config{Mode: "ngram", NumSpeculativeTokens: 4})
	const prompt = "Once upon a time, there was a little girl named Lily. Lily"
	plain := generate(t, e, prompt, GenerateOptions{MaxTokens: 48, NoSpeculation: true, Sampling: Sampling{Logprobs: true, TopLogprobs: 3}})
	if len(plain.Logprobs) != len(plain.Tokens) {
		t.Fatalf("%d logprobs for %d tokens", len(plain.Logprobs), len(plain.Tokens))
	}
	for i, l := range plain.Logprobs {
		if l.Token != plain.Tokens[i] || len(l.Top) != 3 || l.Top[0].Token != l.Token || l.Logprob != l.Top[0].Logprob ||
			l.Logprob > 0 || l.Top[1].Logprob > l.Top[0].Logprob || l.Top[2].Logprob > l.Top[1].Logprob {
			t.Fatalf("greedy token %d: %+v", i, l)
		}
	}

	// A -100 bias on greedy's first token: another first token.
	banned := plain.Tokens[0]
	biased := generate(t, e, prompt, GenerateOptions{MaxTokens: 8, NoSpeculation: true, Sampling: Sampling{LogitBias: map[int]float32{banned: -100}}})
	if slices.Contains(biased.Tokens, banned) {
		t.Fatalf("token %d banned by a -100 bias was generated: %v", banned, biased.Tokens)
	}

	// Repetition: stories15M repeats "Lily"; penalties make repeats rarer.
	repeats := func(toks []int) int {
		seen, n := map[int]bool{}, 0
		for _, tk := range toks {
			if seen[tk] {
				n++
			}
			seen[tk] = true
		}
		return n
	}
	pen := GenerateOptions{MaxTokens: 48, Sampling: Sampling{RepetitionPenalty: 1.5, FrequencyPenalty: 0.5, PresencePenalty: 0.5, Logprobs: true}}
	pen.NoSpeculation = true
	alone := generate(t, e, prompt, pen)
	if repeats(alone.Tokens) >= repeats(plain.Tokens) {
		t.Errorf("with penalties %d repeated tokens, without %d", repeats(alone.Tokens), repeats(plain.Tokens))
	}
	// Speculation verifies under the same processors: same tokens, same logprobs.
	pen.NoSpeculation, pen.FixedSpeculation = false, true
	spec := generate(t, e, prompt, pen)
	if !slices.Equal(spec.Tokens, alone.Tokens) {
		t.Fatalf("penalties with ngram drafts:\n%q\nwithout:\n%q", spec.Text, alone.Text)
	}
	if spec.Metrics.DraftTokens == 0 {
		t.Fatalf("the ngram drafter drafted nothing")
	}
	for i := range alone.Logprobs {
		if d := spec.Logprobs[i].Logprob - alone.Logprobs[i].Logprob; math.Abs(float64(d)) > 1e-3 {
			t.Errorf("token %d: logprob %g verified, %g decoded", i, spec.Logprobs[i].Logprob, alone.Logprobs[i].Logprob)
		}
	}
}
