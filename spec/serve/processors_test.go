package serve

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/wspec/wspec/spec/engine"
)

// The HTTP sampling fields reach the engine's logits processors, with speculation on and off:
// a logit_bias of +100 on one token makes greedy decoding emit only it, -100 on the token
// greedy would pick removes it, min_p 1 at temperature 1 is greedy, and the penalties change
// the output of a prompt that invites repetition, as the engine's own options do.
func TestSamplingFields(t *testing.T) {
	f := specServer(t)
	ctx := context.Background()
	tok := f.e.Tokenizer()
	cat, ok := tok.TokenID("▁cat")
	if !ok {
		t.Fatal("no ▁cat token")
	}
	complete := func(prompt string, maxTokens int, extra map[string]any, opts ...option.RequestOption) string {
		t.Helper()
		p := openai.CompletionNewParams{Model: model, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
			MaxTokens: openai.Int(int64(maxTokens)), Temperature: openai.Float(0)}
		p.SetExtraFields(extra)
		c, err := f.client.Completions.New(ctx, p, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return c.Choices[0].Text
	}
	for _, opts := range [][]option.RequestOption{nil, {speculationOff}} {
		if got := complete("Once upon a time", 5, map[string]any{"logit_bias": map[string]int{strconv.Itoa(cat): 100}}, opts...); got != strings.Repeat(" cat", 5) {
			t.Errorf("logit_bias +100 on ▁cat (%d options): %q", len(opts), got)
		}
	}
	plain := f.generate(t, "Once upon a time", engine.GenerateOptions{MaxTokens: 1})
	first := plain.Tokens[0]
	if got := complete("Once upon a time", 1, map[string]any{"logit_bias": map[string]int{strconv.Itoa(first): -100}}); got == plain.Text {
		t.Errorf("logit_bias -100 on the greedy token %d: still %q", first, got)
	}
	// min_p 1 keeps only the likeliest token: sampling at temperature 1 is then greedy.
	greedy := f.generate(t, "Once upon a time", engine.GenerateOptions{MaxTokens: 16}).Text
	p := openai.CompletionNewParams{Model: model, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
		MaxTokens: openai.Int(16), Temperature: openai.Float(1), Seed: openai.Int(3)}
	p.SetExtraFields(map[string]any{"min_p": 1})
	if c, err := f.client.Completions.New(ctx, p); err != nil || c.Choices[0].Text != greedy {
		t.Errorf("min_p 1 at temperature 1: %v %q, greedy %q", err, c.Choices[0].Text, greedy)
	}
	// Penalties: each changes the text of a repetitive prompt, and equals the engine's.
	prompt := `Lily said, "I like the cat. I like the dog. I like the`
	base := complete(prompt, 24, nil)
	for _, c := range []struct {
		field string
		v     float32
		o     engine.GenerateOptions
	}{
		{"presence_penalty", 2, engine.GenerateOptions{Sampling: engine.Sampling{PresencePenalty: 2}}},
		{"frequency_penalty", 2, engine.GenerateOptions{Sampling: engine.Sampling{FrequencyPenalty: 2}}},
		{"repetition_penalty", 1.5, engine.GenerateOptions{Sampling: engine.Sampling{RepetitionPenalty: 1.5}}},
	} {
		got := complete(prompt, 24, map[string]any{c.field: c.v})
		c.o.MaxTokens = 24
		want := f.generate(t, prompt, c.o).Text
		if got != want || got == base {
			t.Errorf("%s %v: %q, the engine's %q, without it %q", c.field, c.v, got, want, base)
		}
	}
	f.waitIdle(t)
}

// Logprobs come back one per generated token, with top_logprobs entries (chat) or the
// completions' parallel lists, whole and streamed; under greedy decoding the chosen token is
// the likeliest.
func TestLogprobs(t *testing.T) {
	f := specServer(t)
	ctx := context.Background()
	cp := openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tell me a story.")},
		MaxCompletionTokens: openai.Int(8), Temperature: openai.Float(0), Logprobs: openai.Bool(true), TopLogprobs: openai.Int(3)}
	c, err := f.client.Chat.Completions.New(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what, content string, lps []openai.ChatCompletionTokenLogprob) {
		t.Helper()
		var text strings.Builder
		for i, lp := range lps {
			text.WriteString(lp.Token)
			if len(lp.TopLogprobs) != 3 || lp.Logprob > 0 || lp.TopLogprobs[0].Token != lp.Token || lp.TopLogprobs[0].Logprob != lp.Logprob ||
				lp.TopLogprobs[1].Logprob > lp.TopLogprobs[0].Logprob || len(lp.Bytes) == 0 {
				t.Errorf("%s: token %d: %s", what, i, lp.RawJSON())
			}
		}
		if len(lps) != 8 || text.String() != content {
			t.Errorf("%s: %d logprobs spelling %q, content %q", what, len(lps), text.String(), content)
		}
	}
	check("chat", c.Choices[0].Message.Content, c.Choices[0].Logprobs.Content)
	stream := f.client.Chat.Completions.NewStreaming(ctx, cp)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	check("streamed chat", acc.Choices[0].Message.Content, acc.Choices[0].Logprobs.Content)

	comp, err := f.client.Completions.New(ctx, openai.CompletionNewParams{Model: model, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
		MaxTokens: openai.Int(6), Temperature: openai.Float(0), Logprobs: openai.Int(2)})
	if err != nil {
		t.Fatal(err)
	}
	lp := comp.Choices[0].Logprobs
	if len(lp.Tokens) != 6 || len(lp.TokenLogprobs) != 6 || len(lp.TopLogprobs) != 6 || len(lp.TextOffset) != 6 ||
		strings.Join(lp.Tokens, "") != comp.Choices[0].Text {
		t.Fatalf("completions logprobs: %s", lp.RawJSON())
	}
	for i := range lp.Tokens {
		if len(lp.TopLogprobs[i]) == 0 || len(lp.TopLogprobs[i]) > 2 || lp.TopLogprobs[i][lp.Tokens[i]] != lp.TokenLogprobs[i] {
			t.Errorf("completions token %d %q (%v): top %v", i, lp.Tokens[i], lp.TokenLogprobs[i], lp.TopLogprobs[i])
		}
	}
}
