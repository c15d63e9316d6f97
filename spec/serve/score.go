package serve

import (
	"strconv"

	"github.com/wspec/wspec/spec/engine"
)

// Prompt scoring: completions' echo (the prompt's text, and with logprobs its tokens'
// logprobs, before the generated ones) and vLLM's prompt_logprobs (chat and completions), with
// max_tokens 0 to score without generating, as evaluation harnesses do (lm-evaluation-harness
// sends token ids, echo, logprobs and max_tokens 0, and reads token_logprobs past its context).

// promptLogprob is one token's entry in vLLM's prompt_logprobs: a list over the prompt's
// tokens, null for the first, then a map from token id to this, holding the prompt's token
// and the likeliest tokens at its position.
type promptLogprob struct {
	Logprob      float32 `json:"logprob"`
	Rank         int     `json:"rank"`
	DecodedToken string  `json:"decoded_token"`
}

// scoreOptions sets o to score the prompt as prompt_logprobs asks (nil: not asked).
func scoreOptions(o *engine.GenerateOptions, promptLogprobs *int, stream bool) error {
	if promptLogprobs == nil {
		return nil
	}
	if stream {
		return invalid("prompt_logprobs", codeInvalidValue, "prompt_logprobs: not available when stream is true")
	}
	o.PromptLogprobs, o.PromptTopLogprobs = true, *promptLogprobs
	return nil
}

// promptLogprobsOf is vLLM's prompt_logprobs of a result (nil when none were asked for).
func (s *Server) promptLogprobsOf(res *engine.Result, want bool) []map[string]promptLogprob {
	if !want {
		return nil
	}
	out := make([]map[string]promptLogprob, 1, len(res.PromptTokens))
	for _, t := range res.PromptLogprobs {
		text, _ := tokenText(s.tok, t.Token)
		m := map[string]promptLogprob{strconv.Itoa(t.Token): {Logprob: t.Logprob, Rank: t.Rank, DecodedToken: text}}
		for k, top := range t.Top {
			if _, dup := m[strconv.Itoa(top.Token)]; !dup {
				tt, _ := tokenText(s.tok, top.Token)
				m[strconv.Itoa(top.Token)] = promptLogprob{Logprob: top.Logprob, Rank: k + 1, DecodedToken: tt}
			}
		}
		out = append(out, m)
	}
	return out
}

// echoText is the text completions' echo puts before a choice's: the prompt as sent, or its
// tokens' text when it came as ids or may have been cut (truncate_prompt_tokens).
func (s *Server) echoText(p engine.Prompt, r *engine.Request, truncate bool) string {
	if p.Tokens == nil && !truncate {
		return p.Text
	}
	return s.tok.Decode(r.Prompt)
}
