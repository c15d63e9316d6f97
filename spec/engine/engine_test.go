package engine

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/weights"
)

// copyModel copies the stories15M folder (run ./setup.sh first) so a test can break it.
func copyModel(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(storiesDir, f))
		if err != nil {
			if os.IsNotExist(err) && f == "generation_config.json" {
				continue
			}
			t.Fatalf("%v (run ./setup.sh)", err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadRefusesBadModels(t *testing.T) {
	unknown := copyModel(t)
	cfg, _ := os.ReadFile(filepath.Join(unknown, "config.json"))
	os.WriteFile(filepath.Join(unknown, "config.json"), []byte(strings.Replace(string(cfg), `"llama"`, `"gpt_neox"`, 1)), 0o644)
	if _, err := Load(unknown, Options{Device: testDevice(t)}); !errors.Is(err, weights.ErrUnknownArch) || !strings.Contains(err.Error(), "gpt_neox") {
		t.Fatalf("unknown architecture: want ErrUnknownArch naming gpt_neox, got %v", err)
	}
	truncated := copyModel(t)
	p := filepath.Join(truncated, "model.safetensors")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, b[:len(b)/2], 0o644)
	if _, err := Load(truncated, Options{Device: testDevice(t)}); err == nil || !errors.Is(err, weights.ErrMalformed) {
		t.Fatalf("truncated weights: want ErrMalformed, got %v", err)
	}
	if _, err := Load(storiesDir, Options{DType: "f8", Device: testDevice(t)}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "f8") {
		t.Fatalf("unknown dtype: got %v", err)
	}
}

// A bad drafter is reported before the target's weights are read: a missing folder, a
// folder that is not a drafter, a bad config. (The target folder here has no weights at all,
// so an error about the drafter proves the order.)
func TestLoadChecksDrafterFirst(t *testing.T) {
	noWeights := func() string {
		dir := t.TempDir()
		for _, f := range []string{"config.json", "tokenizer.json", "tokenizer_config.json"} {
			b, err := os.ReadFile(filepath.Join(storiesDir, f))
			if err != nil {
				t.Fatalf("%v (run ./setup.sh)", err)
			}
			os.WriteFile(filepath.Join(dir, f), b, 0o644)
		}
		return dir
	}
	target, draft := noWeights(), noWeights()
	cases := []struct {
		name string
		sc   spec.Config
		want string
	}{
		{"missing folder", spec.Config{Mode: "eagle3", NumSpeculativeTokens: 4, Model: filepath.Join(t.TempDir(), "nope")}, "nope"},
		{"not a drafter", spec.Config{Mode: "medusa", NumSpeculativeTokens: 4, Model: t.TempDir()}, "medusa"},
		{"draft model folder without weights", spec.Config{Mode: "draft_model", NumSpeculativeTokens: 4, Model: draft}, draft},
		{"bad k", spec.Config{Mode: "ngram", NumSpeculativeTokens: 99}, "num_speculative_tokens 99"},
		{"no method", spec.Config{NumSpeculativeTokens: 4}, "no method"},
	}
	for _, tc := range cases {
		_, err := Load(target, Options{Device: testDevice(t), Speculative: &tc.sc})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), target) ||
			!strings.Contains(err.Error(), "speculative config") && !strings.Contains(err.Error(), "drafter") {
			t.Errorf("%s: got %v, want an error about the drafter mentioning %q", tc.name, err, tc.want)
		}
	}
	if _, err := Load(target, Options{Device: testDevice(t)}); err == nil || !strings.Contains(err.Error(), target) {
		t.Errorf("the target without weights: %v", err)
	}
}

// Every out-of-range option is refused with an error wrapping ErrInvalid that names it, and
// the engine serves the next request.
func TestGenerateOptionsValidated(t *testing.T) {
	e := stories(t, nil)
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	cases := []struct {
		name string
		o    GenerateOptions
		want string
	}{
		{"negative max_tokens", GenerateOptions{MaxTokens: -1}, "max_tokens"},
		{"negative temperature", GenerateOptions{Sampling: Sampling{Temperature: -0.5}}, "temperature"},
		{"NaN temperature", GenerateOptions{Sampling: Sampling{Temperature: nan}}, "temperature"},
		{"infinite temperature", GenerateOptions{Sampling: Sampling{Temperature: inf}}, "temperature"},
		{"negative top_p", GenerateOptions{Sampling: Sampling{TopP: -0.1}}, "top_p"},
		{"top_p above 1", GenerateOptions{Sampling: Sampling{TopP: 1.5}}, "top_p"},
		{"NaN top_p", GenerateOptions{Sampling: Sampling{TopP: nan}}, "top_p"},
		{"top_k -2", GenerateOptions{Sampling: Sampling{TopK: -2}}, "top_k"},
		{"k above the most", GenerateOptions{NumSpeculativeTokens: spec.MaxSpeculativeTokens + 1}, "num_speculative_tokens"},
		{"negative k", GenerateOptions{NumSpeculativeTokens: -1}, "num_speculative_tokens"},
		{"k without a method", GenerateOptions{NumSpeculativeTokens: 2}, "num_speculative_tokens"},
		{"fixed without a method", GenerateOptions{FixedSpeculation: true}, "num_speculative_tokens"},
		{"min_p above 1", GenerateOptions{Sampling: Sampling{MinP: 1.5}}, "min_p"},
		{"NaN presence", GenerateOptions{Sampling: Sampling{PresencePenalty: nan}}, "presence_penalty"},
		{"frequency above 2", GenerateOptions{Sampling: Sampling{FrequencyPenalty: 2.5}}, "frequency_penalty"},
		{"negative repetition", GenerateOptions{Sampling: Sampling{RepetitionPenalty: -1}}, "repetition_penalty"},
		{"bias above 100", GenerateOptions{Sampling: Sampling{LogitBias: map[int]float32{5: 101}}}, "logit_bias"},
		{"bias outside the vocabulary", GenerateOptions{Sampling: Sampling{LogitBias: map[int]float32{32000: 1}}}, "logit_bias"},
		{"negative bias token", GenerateOptions{Sampling: Sampling{LogitBias: map[int]float32{-1: 1}}}, "logit_bias"},
		{"top_k above the vocabulary", GenerateOptions{Sampling: Sampling{TopK: 32001}}, "top_k"},
		{"17 stop strings", GenerateOptions{Stop: make([]string, 17)}, "stop"},
		{"long stop string", GenerateOptions{Stop: []string{strings.Repeat("x", MaxStopBytes+1)}}, "stop"},
		{"21 top logprobs", GenerateOptions{Sampling: Sampling{TopLogprobs: 21}}, "top_logprobs"},
		{"empty stop string", GenerateOptions{Stop: []string{""}}, "stop"},
	}
	for _, tc := range cases {
		_, err := e.Generate(context.Background(), "Once upon a time", tc.o)
		var ie *InvalidError
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &ie) || ie.Param != tc.want || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an *InvalidError of param %s", tc.name, err, tc.want)
		}
	}
	if _, err := e.Generate(context.Background(), "Once upon a \xff time", GenerateOptions{MaxTokens: 2}); !errors.Is(err, ErrInvalid) {
		t.Errorf("invalid UTF-8 prompt: got %v", err)
	}
	res := generate(t, e, "Once upon a time", GenerateOptions{MaxTokens: 3, Sampling: Sampling{TopK: -1}})
	if len(res.Tokens) != 3 {
		t.Fatalf("after the refusals: %d tokens", len(res.Tokens))
	}
}

// A prompt that fills the context is refused and the engine serves the next request; 12
// greedy tokens are stories15M's text, streamed as generated.
func TestGeneratePromptTooLong(t *testing.T) {
	e := stories(t, nil)
	_, err := e.Generate(context.Background(), strings.Repeat("Once upon a time ", 80), GenerateOptions{MaxTokens: 5})
	if !errors.Is(err, ErrPromptTooLong) {
		t.Fatalf("want ErrPromptTooLong, got %v", err)
	}
	var text strings.Builder
	res := generate(t, e, "Once upon a time", GenerateOptions{MaxTokens: 12, OnText: func(s string) { text.WriteString(s) }})
	if len(res.Tokens) != 12 || !strings.HasPrefix(text.String(), ", there was a little girl") || text.String() != res.Text {
		t.Fatalf("12 greedy tokens: %d tokens, streamed %q, text %q", len(res.Tokens), text.String(), res.Text)
	}
	if res.Finish != spec.FinishLength {
		t.Fatalf("finish %q, want length", res.Finish)
	}
}
