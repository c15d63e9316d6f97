package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/sched"
)

// GenerateOptions are the sampling and speculation settings of one generation. The zero
// value is greedy decoding until the context is full, with the engine's speculation.
type GenerateOptions struct {
	MaxTokens   int     // new tokens at most; 0: until the context is full (OpenAI's null)
	Temperature float32 // 0: greedy; otherwise finite and > 0
	TopP        float32 // nucleus threshold in (0, 1]; 0 is unset, which means 1 (off)
	TopK        int     // keep the k most likely tokens; 0 or -1 (vLLM's spelling): off
	Seed        uint64  // the same seed and settings give the same text
	// Choice tells apart generations of one prompt and seed (OpenAI's n: choice i of n): it
	// is a key of the sampler's random numbers, so choices differ and each is reproducible.
	Choice int
	// Stop strings end the generation where they first appear in the text (which they are
	// not part of), also across token boundaries. At most MaxStops, each non-empty.
	Stop []string

	// Logits processors, applied on the device to the target's logits before temperature and
	// truncation, and to every row a step verifies alike (so speculation keeps the output
	// distribution exact with any of them), in vLLM's order: the bias, then the penalties.
	MinP              float32         // keep tokens with p >= MinP x the likeliest one's (0: off); in [0, 1]
	PresencePenalty   float32         // subtracted once from each token generated so far; in [-2, 2]
	FrequencyPenalty  float32         // subtracted per occurrence in the generated tokens; in [-2, 2]
	RepetitionPenalty float32         // divides positive (multiplies negative) logits of tokens in the prompt or generated; 0 or 1: off
	LogitBias         map[int]float32 // token id -> added to its logit; in [-100, 100]

	// Logprobs asks for the log-probability of each generated token, and TopLogprobs (0..20)
	// for that many of the likeliest tokens at each position: under the model's distribution
	// after the bias and penalties, at temperature 1, before any truncation.
	Logprobs    bool
	TopLogprobs int

	// Speculation: the engine's method drafts up to NumSpeculativeTokens per step (0: the
	// engine's k; at most spec.MaxSpeculativeTokens), as far as drafts pay for themselves
	// under the load of the moment, or exactly that many when FixedSpeculation; none with
	// NoSpeculation.
	NumSpeculativeTokens int
	FixedSpeculation     bool
	NoSpeculation        bool

	OnText func(string) // streamed text, as complete UTF-8 (on the caller's goroutine)
}

// Limits of a request's options.
const (
	MaxStops       = 16  // stop strings
	MaxLogitBias   = 300 // logit bias entries (OpenAI's limit)
	MaxTopLogprobs = 20  // top logprobs per position
)

// Validate checks the options: every value a caller can pass out of range is an error
// wrapping ErrInvalid, naming the field.
func (o *GenerateOptions) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
	}
	t, p := float64(o.Temperature), float64(o.TopP)
	switch {
	case o.MaxTokens < 0:
		return bad("max_tokens %d: want at least 1 (or 0, unset: until the context is full)", o.MaxTokens)
	case math.IsNaN(t) || math.IsInf(t, 0) || t < 0:
		return bad("temperature %v: want a finite value >= 0 (0 is greedy)", o.Temperature)
	case math.IsNaN(p) || p < 0 || p > 1:
		return bad("top_p %v: want a value in (0, 1]", o.TopP)
	case o.TopK < -1:
		return bad("top_k %d: want a value >= 1, or 0 or -1 for off", o.TopK)
	case o.NumSpeculativeTokens < 0 || o.NumSpeculativeTokens > spec.MaxSpeculativeTokens:
		return bad("num_speculative_tokens %d: want 1..%d (0: the engine's)", o.NumSpeculativeTokens, spec.MaxSpeculativeTokens)
	case o.Choice < 0:
		return bad("choice %d: want a value >= 0", o.Choice)
	case len(o.Stop) > MaxStops:
		return bad("%d stop strings: at most %d", len(o.Stop), MaxStops)
	case !finiteIn(o.MinP, 0, 1):
		return bad("min_p %v: want a value in [0, 1]", o.MinP)
	case !finiteIn(o.PresencePenalty, -2, 2):
		return bad("presence_penalty %v: want a value in [-2, 2]", o.PresencePenalty)
	case !finiteIn(o.FrequencyPenalty, -2, 2):
		return bad("frequency_penalty %v: want a value in [-2, 2]", o.FrequencyPenalty)
	case !finiteIn(o.RepetitionPenalty, 0, 1e6) || (o.RepetitionPenalty > 0 && o.RepetitionPenalty < 1e-3):
		return bad("repetition_penalty %v: want a value > 0 (1: off)", o.RepetitionPenalty)
	case len(o.LogitBias) > MaxLogitBias:
		return bad("%d logit_bias entries: at most %d", len(o.LogitBias), MaxLogitBias)
	case o.TopLogprobs < 0 || o.TopLogprobs > MaxTopLogprobs:
		return bad("top_logprobs %d: want 0..%d", o.TopLogprobs, MaxTopLogprobs)
	}
	for tok, b := range o.LogitBias {
		if !finiteIn(b, -100, 100) {
			return bad("logit_bias %v for token %d: want a value in [-100, 100]", b, tok)
		}
	}
	for _, s := range o.Stop {
		if s == "" || !utf8.ValidString(s) {
			return bad("stop string %q: want non-empty UTF-8", s)
		}
	}
	return nil
}

// finiteIn reports whether v is a finite value in [lo, hi].
func finiteIn(v float32, lo, hi float64) bool {
	f := float64(v)
	return !math.IsNaN(f) && f >= lo && f <= hi
}

// TokenLogprob is one generated token's log-probability and, when asked for, the likeliest
// tokens' at its position (most likely first).
type TokenLogprob struct {
	Token   int
	Logprob float32
	Top     []TopLogprob
}

// TopLogprob is one of the likeliest tokens at a position.
type TopLogprob struct {
	Token   int
	Logprob float32
}

// Result is a finished generation.
type Result struct {
	PromptTokens []int
	Tokens       []int             // generated, without the stop token (and cut at a stop string)
	Text         string            // the generated text as streamed (it continues the prompt)
	Finish       spec.FinishReason // why it ended
	Queued       time.Duration     // waiting for a place in the batch
	Prefill      time.Duration     // from the request to its first token
	Decode       time.Duration     // the rest
	Metrics      spec.Metrics      // what speculation did
	Preempted    int               // times its KV pages were taken back and recomputed
	Logprobs     []TokenLogprob    // one per token of Tokens, when asked for
}

// Generate encodes prompt, decodes new tokens (with speculation when the engine has a method
// and o does not turn it off) and streams the text. The engine's scheduler runs it in steps
// shared with the other generations. Cancelling ctx stops it within one step: the result then
// holds the tokens so far and says FinishCancelled (not an error). A request the engine
// cannot serve (a bad option, a prompt that fills the context) is an error wrapping
// ErrInvalid or ErrPromptTooLong, and the engine serves the next one.
func (e *Engine) Generate(ctx context.Context, prompt string, o GenerateOptions) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if !utf8.ValidString(prompt) {
		return nil, fmt.Errorf("%w: the prompt is not valid UTF-8", ErrInvalid)
	}
	if e.isClosed() {
		return nil, ErrClosed
	}
	k := 0
	if e.method != nil && !o.NoSpeculation {
		k = e.k
		if o.NumSpeculativeTokens > 0 {
			k = min(k, o.NumSpeculativeTokens)
		}
	} else if o.NumSpeculativeTokens > 0 && !o.NoSpeculation {
		return nil, fmt.Errorf("%w: num_speculative_tokens %d, but the engine was loaded without a speculative method", ErrInvalid, o.NumSpeculativeTokens)
	}
	ids := e.tok.Encode(prompt, e.tok.AddBOS())
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: empty prompt (and the tokenizer adds no BOS)", ErrInvalid)
	}
	if len(ids) >= e.cfg.MaxSeq {
		return nil, fmt.Errorf("%w: %d tokens, the context is %d", ErrPromptTooLong, len(ids), e.cfg.MaxSeq)
	}
	maxNew := e.cfg.MaxSeq // unset: the scheduler stops at the end of the context
	if o.MaxTokens > 0 {
		maxNew = o.MaxTokens
	}
	start := time.Now()
	ts := newTextStream(e.tok, o.Stop, o.OnText)
	for tok := range o.LogitBias {
		if tok < 0 || tok >= e.cfg.Vocab {
			return nil, fmt.Errorf("%w: logit_bias for token %d, outside the vocabulary of %d", ErrInvalid, tok, e.cfg.Vocab)
		}
	}
	smp := model.Sampling{Temperature: o.Temperature, TopK: max(o.TopK, 0), TopP: o.TopP, MinP: o.MinP, Seed: o.Seed,
		SeqID: uint32(o.Choice), Presence: o.PresencePenalty, Frequency: o.FrequencyPenalty, Repetition: o.RepetitionPenalty,
		Logprobs: o.Logprobs || o.TopLogprobs > 0, TopLogprobs: o.TopLogprobs}
	resc := e.sched.Submit(&sched.Request{Ctx: ctx, Prompt: ids, MaxNew: maxNew, Sampling: smp, Bias: o.LogitBias,
		Stop: e.cfg.EOS, K: k, FixedK: o.FixedSpeculation, Emit: ts.push})
	var r sched.Result
	for done := false; !done; {
		select {
		case <-ts.wake:
			ts.flush(false)
		case r = <-resc:
			done = true
		}
	}
	if r.Err != nil {
		if errors.Is(r.Err, sched.ErrClosed) {
			return nil, ErrClosed
		}
		return nil, r.Err
	}
	ts.flush(true)
	end := time.Now()
	res := &Result{PromptTokens: ids, Tokens: r.Tokens, Text: ts.text.String(), Finish: r.Finish,
		Queued: r.Queued, Metrics: r.Metrics, Preempted: r.Preempted}
	if ts.matched {
		res.Tokens, res.Finish = r.Tokens[:min(ts.kept, len(r.Tokens))], spec.FinishStop
	}
	if smp.Logprobs {
		res.Logprobs = engineLogprobs(res.Tokens, r.Logprobs)
	}
	res.Prefill = r.FirstToken
	if r.FirstToken == 0 {
		res.Prefill = end.Sub(start)
	}
	res.Decode = end.Sub(start) - res.Prefill
	return res, nil
}

// engineLogprobs pairs tokens with the scheduler's logprobs of them.
func engineLogprobs(tokens []int, lps []model.TokenLogprob) []TokenLogprob {
	out := make([]TokenLogprob, min(len(tokens), len(lps)))
	for i := range out {
		out[i] = TokenLogprob{Token: tokens[i], Logprob: lps[i].Logprob}
		for _, t := range lps[i].Top {
			out[i].Top = append(out[i].Top, TopLogprob{Token: t.Token, Logprob: t.Logprob})
		}
	}
	return out
}
