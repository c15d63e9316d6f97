package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wspec/wspec/spec"
)

// vLLM's stop_token_ids end a generation at any of them (ignore_eos or not), and
// truncate_prompt_tokens keeps the prompt's last tokens.
func TestStopTokenIDsAndTruncation(t *testing.T) {
	e := stories(t, nil)
	prompt := "Once upon a time, there was a little girl named Lily."
	plain := generate(t, e, prompt, GenerateOptions{MaxTokens: 24, IgnoreEOS: true})
	stopAt := plain.Tokens[5]
	got := generate(t, e, prompt, GenerateOptions{MaxTokens: 24, IgnoreEOS: true, StopTokenIDs: []int{stopAt}})
	first := slices.Index(plain.Tokens, stopAt)
	if !slices.Equal(got.Tokens, plain.Tokens[:first]) || got.Finish != spec.FinishStop {
		t.Errorf("stop token %d: %v (%v), want %v then stop", stopAt, got.Tokens, got.Finish, plain.Tokens[:first])
	}
	full := e.Tokenizer().Encode(prompt, e.Tokenizer().AddBOS())
	tr := generate(t, e, prompt, GenerateOptions{MaxTokens: 4, TruncatePromptTokens: 5})
	if !slices.Equal(tr.PromptTokens, full[len(full)-5:]) {
		t.Errorf("truncate_prompt_tokens 5: prompt %v, want %v", tr.PromptTokens, full[len(full)-5:])
	}
	for _, o := range []GenerateOptions{{StopTokenIDs: []int{-1}}, {StopTokenIDs: []int{32000}}, {TruncatePromptTokens: -2}} {
		var ie *InvalidError
		if _, err := e.NewRequest(Prompt{Text: "a"}, o); !errors.As(err, &ie) {
			t.Errorf("%+v: %v, want an InvalidError", o, err)
		}
	}
}

// A text far longer than the context is refused as too long without being tokenized (its bytes
// alone say so); with truncate_prompt_tokens it is tokenized and cut.
func TestHugePromptRefusedEarly(t *testing.T) {
	e := stories(t, nil)
	huge := strings.Repeat("the dog ran to the big red house and ", 50000) // 1.9 MB
	_, err := e.NewRequest(Prompt{Text: huge}, GenerateOptions{})
	var pe *PromptTooLongError
	if !errors.As(err, &pe) || !pe.AtLeast || !strings.Contains(err.Error(), "at least") {
		t.Fatalf("a 1.9 MB prompt: %v, want a PromptTooLongError from its length", err)
	}
	r, err := e.NewRequest(Prompt{Text: huge}, GenerateOptions{TruncatePromptTokens: -1, MaxTokens: 8})
	if err != nil || len(r.Prompt) != e.Info().Config.MaxSeq-8 {
		t.Fatalf("truncated to the context: %v, %d tokens", err, len(r.Prompt))
	}
}
