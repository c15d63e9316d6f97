package serve

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/engine"
)

// speculationOff is the extension field that turns speculation off for a request.
var speculationOff = option.WithJSONSet("speculative", map[string]any{"num_speculative_tokens": 0})

// The official client drives completions and chat completions, whole and streamed: greedy
// text equals the engine's own for the same prompt, with speculation on and off, the finish
// reason is OpenAI's and the usage counts the tokens.
func TestGreedyEqualsEngine(t *testing.T) {
	f := specServer(t)
	ctx := context.Background()
	const maxTokens = 24
	for _, prompt := range []string{"Once upon a time", "The little dog ran to the park and"} {
		want := f.generate(t, prompt, engine.GenerateOptions{MaxTokens: maxTokens, NoSpeculation: true})
		if spec := f.generate(t, prompt, engine.GenerateOptions{MaxTokens: maxTokens}); spec.Text != want.Text {
			t.Fatalf("the engine itself: speculative %q, plain %q", spec.Text, want.Text)
		}
		params := openai.CompletionNewParams{Model: model, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
			MaxTokens: openai.Int(maxTokens), Temperature: openai.Float(0)}
		for _, opts := range [][]option.RequestOption{nil, {speculationOff}} {
			c, err := f.client.Completions.New(ctx, params, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Choices) != 1 || c.Choices[0].Text != want.Text || c.Choices[0].FinishReason != "length" {
				t.Errorf("completion (%d options) of %q: %+v, want %q (length)", len(opts), prompt, c.Choices, want.Text)
			}
			if c.Object != "text_completion" || !strings.HasPrefix(c.ID, "cmpl-") || c.Model != model ||
				c.Usage.PromptTokens != int64(len(want.PromptTokens)) || c.Usage.CompletionTokens != maxTokens ||
				c.Usage.TotalTokens != c.Usage.PromptTokens+maxTokens {
				t.Errorf("completion: %s", c.RawJSON())
			}
			sp := params
			sp.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			stream := f.client.Completions.NewStreaming(ctx, sp, opts...)
			var text strings.Builder
			var finish string
			var usage openai.CompletionUsage
			chunks := 0
			for stream.Next() {
				ch := stream.Current()
				chunks++
				for _, c := range ch.Choices {
					text.WriteString(c.Text)
					if c.FinishReason != "" {
						finish = string(c.FinishReason)
					}
				}
				if ch.Usage.TotalTokens > 0 {
					usage = ch.Usage
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if text.String() != want.Text || finish != "length" || usage.CompletionTokens != maxTokens || chunks < 3 {
				t.Errorf("streamed completion of %q: %q (%s, usage %+v, %d chunks), want %q", prompt, text.String(), finish, usage, chunks, want.Text)
			}
		}

		// Chat: the default template (stories15M has none) makes the prompt.
		rendered := "User: " + prompt + "\nAssistant:"
		want = f.generate(t, rendered, engine.GenerateOptions{MaxTokens: maxTokens, NoSpeculation: true})
		cp := openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
			MaxCompletionTokens: openai.Int(maxTokens), Temperature: openai.Float(0)}
		for _, opts := range [][]option.RequestOption{nil, {speculationOff}} {
			c, err := f.client.Chat.Completions.New(ctx, cp, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Choices) != 1 || c.Choices[0].Message.Content != want.Text || c.Choices[0].FinishReason != "length" ||
				c.Choices[0].Message.Role != "assistant" || c.Object != "chat.completion" || c.Usage.PromptTokens != int64(len(want.PromptTokens)) {
				t.Errorf("chat of %q: %s, want %q", prompt, c.RawJSON(), want.Text)
			}
			stream := f.client.Chat.Completions.NewStreaming(ctx, cp, opts...)
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				if !acc.AddChunk(stream.Current()) {
					t.Fatalf("the accumulator refused chunk %s", stream.Current().RawJSON())
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != want.Text || acc.Choices[0].FinishReason != "length" {
				t.Errorf("streamed chat of %q: %+v, want %q", prompt, acc.Choices, want.Text)
			}
		}
	}
	f.waitIdle(t)
}

// n choices of one sampled prompt run concurrently, each equal to the engine's choice i
// with the same seed; stop strings cut the text across token boundaries.
func TestChoicesAndStop(t *testing.T) {
	f := specServer(t)
	ctx := context.Background()
	prompt := "Once upon a time"
	c, err := f.client.Completions.New(ctx, openai.CompletionNewParams{Model: model, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
		MaxTokens: openai.Int(12), Temperature: openai.Float(1.5), Seed: openai.Int(7), N: openai.Int(3)})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Choices) != 3 {
		t.Fatalf("n=3: %d choices", len(c.Choices))
	}
	distinct := map[string]bool{}
	for i, ch := range c.Choices {
		want := f.generate(t, prompt, engine.GenerateOptions{MaxTokens: 12, Sampling: engine.Sampling{Temperature: 1.5, Seed: 7, Choice: uint32(i)}})
		if ch.Index != int64(i) || ch.Text != want.Text {
			t.Errorf("choice %d: %q, the engine's choice %d: %q", ch.Index, ch.Text, i, want.Text)
		}
		distinct[ch.Text] = true
	}
	if len(distinct) < 2 {
		t.Errorf("3 sampled choices are all %q", c.Choices[0].Text)
	}

	full := f.generate(t, prompt, engine.GenerateOptions{MaxTokens: 24}).Text
	// A stop string made of the end of one word and the start of the next straddles tokens.
	words := strings.Fields(full)
	i := 2
	for len(words[i]) < 3 || len(words[i+1]) < 3 {
		i++
	}
	stop := words[i][len(words[i])-2:] + " " + words[i+1][:2]
	at := strings.Index(full, stop)
	for _, stream := range []bool{false, true} {
		body := mustJSON(t, map[string]any{"model": model, "prompt": prompt, "max_tokens": 24, "temperature": 0, "stop": []string{"zzzz", stop}, "stream": stream})
		var text, finish string
		if stream {
			events, done := f.stream(t, ctx, "/v1/completions", body)
			if !done {
				t.Fatal("no [DONE]")
			}
			for _, ev := range events {
				var ch completionReply
				mustUnmarshal(t, ev, &ch)
				for _, c := range ch.Choices {
					text += c.Text
					if c.FinishReason != nil {
						finish = *c.FinishReason
					}
				}
			}
		} else {
			code, b := f.post(t, "/v1/completions", body)
			var rep completionReply
			mustUnmarshal(t, string(b), &rep)
			if code != 200 || len(rep.Choices) != 1 {
				t.Fatalf("%d %s", code, b)
			}
			text, finish = rep.Choices[0].Text, *rep.Choices[0].FinishReason
		}
		if text != full[:at] || finish != "stop" {
			t.Errorf("stop %q (stream %v): %q (%s), want %q", stop, stream, text, finish, full[:at])
		}
	}
}

// ignore_eos (vLLM's) generates past the end of the story to max_tokens.
func TestIgnoreEOS(t *testing.T) {
	f := specServer(t)
	prompt := "Once upon a time"
	ends := f.generate(t, prompt, engine.GenerateOptions{MaxTokens: 250})
	if ends.Finish != spec.FinishStop {
		t.Fatalf("the story does not end within 250 tokens (%q): pick another prompt", ends.Finish)
	}
	body := mustJSON(t, map[string]any{"model": model, "prompt": prompt, "max_tokens": 250, "temperature": 0, "ignore_eos": true})
	code, b := f.post(t, "/v1/completions", body)
	var rep completionReply
	mustUnmarshal(t, string(b), &rep)
	if code != 200 || len(rep.Choices) != 1 {
		t.Fatalf("%d %s", code, b)
	}
	if c := rep.Choices[0]; *c.FinishReason != "length" || !strings.HasPrefix(c.Text, ends.Text) || len(c.Text) <= len(ends.Text) {
		t.Fatalf("ignore_eos: %s, %q; without it the text ends at %d bytes", *c.FinishReason, c.Text, len(ends.Text))
	}
}

// /v1/models lists the served model, /v1/models/{id} finds it, /health is 200.
func TestModelsAndHealth(t *testing.T) {
	f := specServer(t)
	ctx := context.Background()
	page, err := f.client.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != model || page.Data[0].Object != "model" {
		t.Fatalf("models: %s", page.RawJSON())
	}
	m, err := f.client.Models.Get(ctx, model)
	if err != nil || m.ID != model {
		t.Fatalf("model %s: %v %+v", model, err, m)
	}
	if _, err := f.client.Models.Get(ctx, "gpt-4"); err == nil {
		t.Fatal("model gpt-4 found")
	}
	resp, err := f.ts.Client().Get(f.ts.URL + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", err, resp)
	}
	resp.Body.Close()
}
