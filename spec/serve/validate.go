package serve

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/engine"
)

// Limits of a request, beyond the engine's own (engine.MaxStops, MaxLogitBias, MaxTopLogprobs).
const (
	MaxN         = 16  // choices per prompt
	MaxChoices   = 64  // choices per request (prompts x n)
	MaxStopBytes = 256 // bytes of one stop string
)

// request is a validated request: its prompts, each run n times with opts (opts.Choice set
// per choice).
type request struct {
	prompts      []string
	promptTokens []int
	n            int
	opts         engine.GenerateOptions
	stream       bool
	usage        bool // stream_options.include_usage
}

// options checks the fields chat and completions share and turns them into the engine's
// options. maxTokens is the request's max_tokens (or max_completion_tokens), named param.
func (s *Server) options(f *samplingFields, maxTokens *int, maxParam string) (*request, error) {
	if f.Model != "" && f.Model != s.name {
		return nil, invalid("model", codeModelNotFound, "the model `%s` does not exist (this server serves %q)", f.Model, s.name)
	}
	rq := &request{n: 1, stream: f.Stream}
	o := &rq.opts
	if f.StreamOptions != nil {
		if !f.Stream {
			return nil, invalid("stream_options", codeInvalidValue, "stream_options: only allowed when stream is true")
		}
		rq.usage = f.StreamOptions.IncludeUsage
	}
	if f.N != nil {
		if *f.N < 1 || *f.N > MaxN {
			return nil, invalid("n", codeInvalidValue, "n %d: want 1..%d", *f.N, MaxN)
		}
		rq.n = *f.N
	}
	if maxTokens != nil {
		if *maxTokens < 1 {
			return nil, invalid(maxParam, codeInvalidValue, "%s %d: want at least 1", maxParam, *maxTokens)
		}
		if *maxTokens > s.maxSeq {
			return nil, invalid(maxParam, codeInvalidValue, "%s %d: larger than the model's context of %d tokens", maxParam, *maxTokens, s.maxSeq)
		}
		o.MaxTokens = *maxTokens
	}
	o.Temperature = 1 // OpenAI's default
	floats := []struct {
		name   string
		v      *float64
		lo, hi float64
		loOpen bool
		dst    *float32
	}{
		{"temperature", f.Temperature, 0, 2, false, &o.Temperature},
		{"top_p", f.TopP, 0, 1, true, &o.TopP},
		{"min_p", f.MinP, 0, 1, false, &o.MinP},
		{"presence_penalty", f.PresencePenalty, -2, 2, false, &o.PresencePenalty},
		{"frequency_penalty", f.FrequencyPenalty, -2, 2, false, &o.FrequencyPenalty},
		{"repetition_penalty", f.RepetitionPenalty, 0, 1e6, true, &o.RepetitionPenalty},
	}
	for _, fl := range floats {
		if fl.v == nil {
			continue
		}
		v := *fl.v
		if math.IsNaN(v) || v < fl.lo || v > fl.hi || (fl.loOpen && v == fl.lo) {
			lb := "["
			if fl.loOpen {
				lb = "("
			}
			return nil, invalid(fl.name, codeInvalidValue, "%s %v: want a value in %s%v, %v]", fl.name, v, lb, fl.lo, fl.hi)
		}
		*fl.dst = float32(v)
	}
	if f.TopK != nil {
		if k := *f.TopK; k < -1 || k > s.vocab {
			return nil, invalid("top_k", codeInvalidValue, "top_k %d: want -1 or 0 (off), or 1..%d", k, s.vocab)
		}
		o.TopK = *f.TopK
	}
	if f.Seed != nil {
		o.Seed = uint64(*f.Seed)
	} else {
		o.Seed = rand64() // unseeded requests differ
	}
	if err := s.stops(f.Stop, o); err != nil {
		return nil, err
	}
	if err := s.logitBias(f.LogitBias, o); err != nil {
		return nil, err
	}
	if err := s.speculation(f.Speculative, o); err != nil {
		return nil, err
	}
	return rq, nil
}

func (s *Server) stops(stop *stopField, o *engine.GenerateOptions) error {
	if stop == nil {
		return nil
	}
	if len(*stop) > engine.MaxStops {
		return invalid("stop", codeInvalidValue, "stop: %d strings, at most %d", len(*stop), engine.MaxStops)
	}
	for _, st := range *stop {
		if st == "" || len(st) > MaxStopBytes {
			return invalid("stop", codeInvalidValue, "stop: each string must be 1..%d bytes, got %d", MaxStopBytes, len(st))
		}
	}
	o.Stop = *stop
	return nil
}

func (s *Server) logitBias(bias map[string]float64, o *engine.GenerateOptions) error {
	if len(bias) == 0 {
		return nil
	}
	if len(bias) > engine.MaxLogitBias {
		return invalid("logit_bias", codeInvalidValue, "logit_bias: %d entries, at most %d", len(bias), engine.MaxLogitBias)
	}
	o.LogitBias = make(map[int]float32, len(bias))
	for k, v := range bias {
		id, err := strconv.Atoi(k)
		if err != nil || id < 0 || id >= s.vocab {
			return invalid("logit_bias", codeInvalidValue, "logit_bias: key %q is not a token id in 0..%d", k, s.vocab-1)
		}
		if math.IsNaN(v) || v < -100 || v > 100 {
			return invalid("logit_bias", codeInvalidValue, "logit_bias: %v for token %d, want a value in [-100, 100]", v, id)
		}
		o.LogitBias[id] = float32(v)
	}
	return nil
}

// speculation applies the "speculative" extension field.
func (s *Server) speculation(sp *speculativeField, o *engine.GenerateOptions) error {
	if sp == nil {
		return nil
	}
	if sp.NumSpeculativeTokens == nil {
		if sp.Fixed && s.method == "" {
			return invalid("speculative", codeInvalidValue, "speculative.fixed: the server runs without speculative decoding")
		}
		o.FixedSpeculation = sp.Fixed
		return nil
	}
	k := *sp.NumSpeculativeTokens
	switch {
	case k < 0 || k > spec.MaxSpeculativeTokens:
		return invalid("speculative", codeInvalidValue, "speculative.num_speculative_tokens %d: want 0 (off) or 1..%d", k, spec.MaxSpeculativeTokens)
	case k == 0 && sp.Fixed:
		return invalid("speculative", codeInvalidValue, "speculative.fixed with num_speculative_tokens 0: nothing to fix")
	case k == 0:
		o.NoSpeculation = true
	case s.method == "":
		return invalid("speculative", codeInvalidValue, "speculative.num_speculative_tokens %d: the server runs without speculative decoding (start it with --speculative-mode)", k)
	default:
		o.NumSpeculativeTokens, o.FixedSpeculation = k, sp.Fixed
	}
	return nil
}

// checkPrompt counts a prompt's tokens (as Generate will encode it) and checks that it and
// max_tokens fit in the context.
func (s *Server) checkPrompt(text, param string, o *engine.GenerateOptions, maxParam string) (int, error) {
	n := len(s.tok.Encode(text, s.tok.AddBOS()))
	switch {
	case n == 0:
		return 0, invalid(param, codeInvalidValue, "%s: empty (and the tokenizer adds no BOS)", param)
	case n >= s.maxSeq:
		return 0, invalid(param, codeContextLength, "This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input.", s.maxSeq, n)
	case o.MaxTokens > 0 && n+o.MaxTokens > s.maxSeq:
		return 0, invalid(maxParam, codeContextLength, "'%s' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d).",
			maxParam, o.MaxTokens, s.maxSeq, n, o.MaxTokens, s.maxSeq, n)
	}
	return n, nil
}

// engineError maps an error of Generate to the client's: the request's fault is a 400,
// the server's closing a 503, anything else a 500.
func engineError(err error) error {
	switch {
	case errors.Is(err, engine.ErrInvalid), errors.Is(err, engine.ErrPromptTooLong):
		msg := err.Error()
		if _, rest, ok := strings.Cut(msg, engine.ErrInvalid.Error()+": "); ok {
			msg = rest
		}
		param, _, _ := strings.Cut(msg, " ") // the engine's messages start with the field's name
		if !strings.Contains(param, "_") && param != "temperature" {
			param = ""
		}
		code := codeInvalidValue
		if errors.Is(err, engine.ErrPromptTooLong) {
			code, param = codeContextLength, ""
		}
		return invalid(param, code, "%s", msg)
	case errors.Is(err, engine.ErrClosed):
		return errShuttingDown
	}
	return fmt.Errorf("generate: %w", err)
}
