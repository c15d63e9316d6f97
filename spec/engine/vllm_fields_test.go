package engine

import (
	"context"
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
		if _, err := e.NewRequest(context.Background(), Prompt{Text: "a"}, o); !errors.As(err, &ie) {
			t.Errorf("%+v: %v, want an InvalidError", o, err)
		}
	}
}

// A text far longer than the context is refused as too long without being tokenized (its bytes
// alone say so); with truncate_prompt_tokens it is tokenized and cut.
func TestHugePromptRefusedEarly(t *testing.T) {
	e := stories(t, nil)
	huge := strings.Repeat("the dog ran to the big red house and ", 50000) // 1.9 MB
	_, err := e.NewRequest(context.Background(), Prompt{Text: huge}, GenerateOptions{})
	var pe *PromptTooLongError
	if !errors.As(err, &pe) || !pe.AtLeast || !strings.Contains(err.Error(), "at least") {
		t.Fatalf("a 1.9 MB prompt: %v, want a PromptTooLongError from its length", err)
	}
	r, err := e.NewRequest(context.Background(), Prompt{Text: huge}, GenerateOptions{TruncatePromptTokens: -1, MaxTokens: 8})
	if err != nil || len(r.Prompt) != e.Info().Config.MaxSeq-8 {
		t.Fatalf("truncated to the context: %v, %d tokens", err, len(r.Prompt))
	}
}

// min_tokens holds back the stop token ids and the stop strings until that many tokens are
// out; include_stop_str_in_output keeps the stop string; skip_special_tokens false writes
// special tokens, spaced apart unless spaces_between_special_tokens is false.
func TestMinTokensStopStringsSpecialTokens(t *testing.T) {
	e := stories(t, nil)
	prompt := "Once upon a time, there was a little girl named Lily."
	plain := generate(t, e, prompt, GenerateOptions{MaxTokens: 24, IgnoreEOS: true})
	stopTok := plain.Tokens[4]
	first := slices.Index(plain.Tokens, stopTok)
	got := generate(t, e, prompt, GenerateOptions{MaxTokens: 24, IgnoreEOS: true, StopTokenIDs: []int{stopTok}, MinTokens: first + 3})
	if len(got.Tokens) < first+3 || slices.Contains(got.Tokens[:first+3], stopTok) || !slices.Equal(got.Tokens[:first], plain.Tokens[:first]) {
		t.Errorf("min_tokens %d with stop token %d: %v (plain %v)", first+3, stopTok, got.Tokens, plain.Tokens)
	}

	// A stop string: the text's first word after the prompt's name; with min_tokens past it,
	// the cut comes at a later appearance (or none).
	word := strings.Fields(plain.Text)[0]
	cut := generate(t, e, prompt, GenerateOptions{MaxTokens: 24, IgnoreEOS: true, Stop: []string{word}})
	kept := generate(t, e, prompt, GenerateOptions{MaxTokens: 24, IgnoreEOS: true, Stop: []string{word}, IncludeStopStr: true})
	held := generate(t, e, prompt, GenerateOptions{MaxTokens: 24, IgnoreEOS: true, Stop: []string{word}, MinTokens: 20})
	switch i := strings.Index(plain.Text, word); {
	case cut.Text != plain.Text[:i]:
		t.Errorf("stop %q: %q, want %q", word, cut.Text, plain.Text[:i])
	case kept.Text != plain.Text[:i+len(word)] || !slices.Equal(kept.Tokens, cut.Tokens):
		t.Errorf("stop %q kept: %q (%d tokens), want %q (%d)", word, kept.Text, len(kept.Tokens), plain.Text[:i+len(word)], len(cut.Tokens))
	case len(held.Tokens) < 20 || !strings.HasPrefix(plain.Text, held.Text) || strings.Count(held.Text, word) != strings.Count(plain.Text[:len(held.Text)], word):
		t.Errorf("stop %q with min_tokens 20: %q (%d tokens)", word, held.Text, len(held.Tokens))
	}

	eos := e.Info().Config.EOS[0]
	force := GenerateOptions{MaxTokens: 3, IgnoreEOS: true}
	force.LogitBias = map[int]float32{eos: 100}
	piece := e.Tokenizer().Piece(eos)
	for _, c := range []struct {
		keep, noSpaces bool
		want           string
	}{{false, false, ""}, {true, false, piece + " " + piece + " " + piece}, {true, true, piece + piece + piece}} {
		o := force
		o.KeepSpecialTokens, o.NoSpecialTokenSpaces = c.keep, c.noSpaces
		if r := generate(t, e, prompt, o); r.Text != c.want || !slices.Equal(r.Tokens, []int{eos, eos, eos}) {
			t.Errorf("keep %v, no spaces %v: %q %v, want %q", c.keep, c.noSpaces, r.Text, r.Tokens, c.want)
		}
	}
	var ie *InvalidError
	if _, err := e.NewRequest(context.Background(), Prompt{Text: "a"}, GenerateOptions{MaxTokens: 3, MinTokens: 4}); !errors.As(err, &ie) || ie.Param != "min_tokens" {
		t.Errorf("min_tokens over max_tokens: %v", err)
	}
}
