package serve

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/spec/grammar"
)

// Limits of a request, beyond the engine's own (engine.MaxStops, MaxLogitBias, MaxTopLogprobs).
const (
	MaxN       = 16 // choices per prompt
	MaxChoices = 64 // choices per request (prompts x n)
)

// request is a request whose prompts are tokenized and options validated (by the engine's
// NewRequest, once): each prompt is run n times, choice i with its own random key.
type request struct {
	prompts []*engine.Request
	n       int
	stream  bool
	usage   bool // stream_options.include_usage
	// params renames the engine's parameter names to this endpoint's (completions' top
	// logprobs are its "logprobs"); promptParam is where the prompt came from.
	params      map[string]string
	promptParam string
	maxParam    string
	tools       *toolPlan // chat: the tools and how the reply calls them
}

// options turns the fields chat and completions share into the engine's options. It checks
// only what belongs to the wire, not to the engine: the model's name, stream_options without
// stream, n, max_tokens being at least 1 (0: score the prompt alone; null: the rest of the
// context), and the shapes
// of the values; the engine's NewRequest validates the rest. maxTokens is the request's
// max_tokens (or max_completion_tokens), named maxParam.
func (s *Server) options(f *samplingFields, maxTokens *int, maxParam string) (*request, *engine.GenerateOptions, error) {
	if f.Model != "" && f.Model != s.name {
		return nil, nil, modelNotFound(f.Model, s.name)
	}
	rq := &request{n: 1, stream: f.Stream, maxParam: maxParam, params: map[string]string{"max_tokens": maxParam}}
	sampling, err := s.sampling(f.params)
	if err != nil {
		return nil, nil, err
	}
	o := &engine.GenerateOptions{Sampling: sampling, IgnoreEOS: f.IgnoreEOS, StopTokenIDs: f.StopTokenIDs, TruncatePromptTokens: f.TruncatePromptTokens,
		MinTokens: f.MinTokens, IncludeStopStr: f.IncludeStopStrInOutput,
		KeepSpecialTokens:    f.SkipSpecialTokens != nil && !*f.SkipSpecialTokens,
		NoSpecialTokenSpaces: f.SpacesBetweenSpecialTokens != nil && !*f.SpacesBetweenSpecialTokens}
	if f.StreamOptions != nil {
		if !f.Stream {
			return nil, nil, invalid("stream_options", codeInvalidValue, "stream_options: only allowed when stream is true")
		}
		rq.usage = f.StreamOptions.IncludeUsage
	}
	if f.N != nil {
		if *f.N < 1 || *f.N > MaxN {
			return nil, nil, invalid("n", codeInvalidValue, "n %d: want 1..%d", *f.N, MaxN)
		}
		rq.n = *f.N
	}
	if maxTokens != nil {
		if *maxTokens < 0 || (*maxTokens == 0 && !f.echo && f.PromptLogprobs == nil) {
			return nil, nil, invalid(maxParam, codeInvalidValue, "%s %d: want at least 1 (0 only to score the prompt: echo or prompt_logprobs)", maxParam, *maxTokens)
		}
		o.MaxTokens, o.ScoreOnly = *maxTokens, *maxTokens == 0
	}
	if err := scoreOptions(o, f.PromptLogprobs, f.Stream); err != nil {
		return nil, nil, err
	}
	if f.Seed != nil {
		o.Seed = uint64(*f.Seed)
	} else {
		o.Seed = s.seeds.next() // unseeded requests differ (unless the server has a --seed)
	}
	if f.Stop != nil {
		o.Stop = *f.Stop
	}
	if len(f.LogitBias) > 0 {
		o.LogitBias = make(map[int]float32, len(f.LogitBias))
		for k, v := range f.LogitBias {
			id, err := strconv.Atoi(k)
			if err != nil {
				return nil, nil, invalid("logit_bias", codeInvalidValue, "logit_bias: key %q is not a token id", k)
			}
			o.LogitBias[id] = float32(v)
		}
	}
	st, param, err := structured(f)
	if err != nil {
		return nil, nil, err
	}
	if st != nil {
		o.Structured = st
		rq.params["structured_outputs"] = param
	}
	if sp := f.Speculative; sp != nil {
		o.Speculate(sp.NumSpeculativeTokens, sp.Fixed)
	}
	return rq, o, nil
}

// prepare validates o and tokenizes each prompt (through the engine, once), and checks that
// prompt and max_tokens fit the context as OpenAI's API does.
func (s *Server) prepare(ctx context.Context, rq *request, prompts []engine.Prompt, o *engine.GenerateOptions) error {
	if m := s.cfg.MaxLogprobs; m > 0 && max(o.TopLogprobs, o.PromptTopLogprobs) > m {
		param, n := "top_logprobs", o.TopLogprobs
		if o.PromptTopLogprobs > m {
			param, n = "prompt_logprobs", o.PromptTopLogprobs
		}
		if p, ok := rq.params[param]; ok {
			param = p
		}
		return invalid(param, codeInvalidValue, "%s %d: this server returns at most %d (--max-logprobs)", param, n, m)
	}
	for _, p := range prompts {
		r, err := s.e.NewRequest(ctx, p, *o)
		if err != nil {
			return s.requestError(rq, err)
		}
		if n, m := len(r.Prompt), r.MaxTokens(); m > 0 && n+m > s.maxSeq {
			return invalid(rq.maxParam, codeContextLength, "'%s' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d).",
				rq.maxParam, m, s.maxSeq, n, m, s.maxSeq, n)
		}
		rq.prompts = append(rq.prompts, r)
	}
	return nil
}

// requestError maps an engine error to the client's, by type: an invalid value is a 400 about
// its parameter, a prompt longer than the context a 400 context_length_exceeded, the engine
// closing a 503, anything else a 500.
func (s *Server) requestError(rq *request, err error) error {
	var ie *engine.InvalidError
	var pe *engine.PromptTooLongError
	switch {
	case errors.As(err, &ie):
		param := ie.Param
		if rq != nil {
			if p, ok := rq.params[param]; ok {
				param = p
			}
			if param == "prompt" {
				param = rq.promptParam
			}
		}
		return invalid(param, codeInvalidValue, "%s", ie.Msg)
	case errors.As(err, &pe):
		param := "prompt"
		if rq != nil {
			param = rq.promptParam
		}
		least := ""
		if pe.AtLeast {
			least = "at least "
		}
		return invalid(param, codeContextLength, "This model's maximum context length is %d tokens. However, your request has %s%d input tokens. Please reduce the length of the input.", pe.Context, least, pe.Tokens)
	case errors.Is(err, engine.ErrClosed):
		return errShuttingDown
	case errors.Is(err, grammar.ErrUnsupported) || errors.Is(err, grammar.ErrInvalid):
		// the request's grammar failed while generating (too ambiguous): the client's to
		// change, not a server error a client retries
		param := "structured_outputs"
		if rq != nil {
			if p, ok := rq.params[param]; ok {
				param = p
			}
		}
		return invalid(param, codeInvalidValue, "%s: the structured output failed while generating: %v", param, err)
	}
	return fmt.Errorf("generate: %w", err)
}
