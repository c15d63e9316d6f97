package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/grammar"
)

// Errors of the engine's contract; the concrete errors wrap them.
var (
	// ErrClosed is returned by every call after Close.
	ErrClosed = errors.New("engine closed")
	// ErrInvalid is wrapped by every *InvalidError: a request's value out of range.
	ErrInvalid = errors.New("invalid request")
	// ErrPromptTooLong is wrapped by *PromptTooLongError.
	ErrPromptTooLong = errors.New("prompt longer than the context")
)

// InvalidError is a request value out of range. Param names it as the OpenAI API does
// ("temperature", "logit_bias", ...), so a server maps it with errors.As, not by its text.
type InvalidError struct {
	Param string
	Msg   string // the whole message, starting with the value
}

func (e *InvalidError) Error() string { return e.Msg }
func (e *InvalidError) Unwrap() error { return ErrInvalid }

func invalid(param, format string, a ...any) error {
	return &InvalidError{Param: param, Msg: fmt.Sprintf(format, a...)}
}

// PromptTooLongError is a prompt that leaves no room in the model's context.
type PromptTooLongError struct {
	Tokens, Context int
	AtLeast         bool // Tokens is a lower bound (the text was not tokenized)
}

func (e *PromptTooLongError) Error() string {
	if e.AtLeast {
		return fmt.Sprintf("%v: at least %d tokens, the context is %d", ErrPromptTooLong, e.Tokens, e.Context)
	}
	return fmt.Sprintf("%v: %d tokens, the context is %d", ErrPromptTooLong, e.Tokens, e.Context)
}
func (e *PromptTooLongError) Unwrap() error { return ErrPromptTooLong }

// Sampling is how a generation's tokens are drawn (batch.Sampling): temperature and
// truncation, the logits processors, logprobs and the random key. GenerateOptions embeds it
// and it goes, as validated, down to the device.
type Sampling = batch.Sampling

// GenerateOptions are the settings of one generation. The zero value is greedy decoding until
// the context is full, with the engine's speculation.
type GenerateOptions struct {
	MaxTokens int // new tokens at most; 0: until the context is full (OpenAI's null)
	// Stop strings end the generation where they first appear in the text (which they are
	// not part of), also across token boundaries. At most MaxStops, each 1..MaxStopBytes.
	Stop []string
	// IgnoreEOS keeps generating past the model's end-of-sequence tokens (vLLM's ignore_eos:
	// for benchmarks and comparisons of a fixed length).
	IgnoreEOS bool
	// StopTokenIDs end the generation too (not part of it), IgnoreEOS or not (vLLM's
	// stop_token_ids): at most MaxStopTokenIDs ids of the vocabulary.
	StopTokenIDs []int
	// MinTokens holds back the end-of-sequence and stop tokens and the stop strings until that
	// many tokens are generated (vLLM's min_tokens; at most MaxTokens when that is set).
	MinTokens int
	// IncludeStopStr keeps the stop string that ended the text in it (vLLM's
	// include_stop_str_in_output).
	IncludeStopStr bool
	// KeepSpecialTokens writes special tokens (an end-of-sequence token generated with
	// IgnoreEOS, chat markers) into the text as their strings; by default they give no text
	// (vLLM's skip_special_tokens, true by default). With it, each is set apart from the text
	// around it by a space, as Hugging Face's decode does, unless NoSpecialTokenSpaces (vLLM's
	// spaces_between_special_tokens false).
	KeepSpecialTokens    bool
	NoSpecialTokenSpaces bool
	// TruncatePromptTokens keeps only the prompt's last n tokens (vLLM's
	// truncate_prompt_tokens; -1: as many as the context leaves room for; 0: off).
	TruncatePromptTokens int

	// Sampling: the scalar parameters as SamplingParams declares them (their ranges are
	// there); LogitBias up to MaxLogitBias token ids of the vocabulary, each in [-100, 100];
	// TopLogprobs 0..MaxTopLogprobs (with Logprobs implied); Choice tells apart the
	// generations of one prompt and seed (OpenAI's n: choice i of n).
	Sampling

	// Speculation: the engine's method drafts up to NumSpeculativeTokens per step (0: the
	// engine's k; at most spec.MaxSpeculativeTokens), as far as drafts pay for themselves
	// under the load of the moment, or exactly that many when FixedSpeculation; none with
	// NoSpeculation.
	NumSpeculativeTokens int
	FixedSpeculation     bool
	NoSpeculation        bool
	// OneHotDrafts has a sampling drafter propose its argmax one-hot where the request samples
	// (the output is exact either way): what `wspec bench --one-hot` sets its sampled drafts
	// against. No entry point gives it to users.
	OneHotDrafts bool

	// PromptLogprobs scores the prompt: Result.PromptLogprobs holds each prompt token's logprob
	// after the tokens before it (all but the first), and its rank, with PromptTopLogprobs
	// (0..MaxTopLogprobs, implying PromptLogprobs) likeliest tokens each: the model's raw
	// log-softmax, before any processor (vLLM's prompt_logprobs). A scored prompt takes nothing
	// from the prefix cache and runs in steps of up to the target's most drafts a step.
	// ScoreOnly generates nothing after it (the OpenAI API's max_tokens 0 with echo).
	PromptLogprobs    bool
	PromptTopLogprobs int
	ScoreOnly         bool

	// Structured constrains the output to a JSON schema, free JSON, a regular expression, a
	// choice or a GBNF grammar (structured outputs; nil: free text). The engine compiles it
	// once per distinct spec and keeps the result for later requests.
	Structured *grammar.Spec

	OnText func(string) // streamed text, as complete UTF-8 (on the caller's goroutine)
}

// SmallestTopP is a nucleus below any token's probability, so it keeps the likeliest token
// alone (ties kept): what an entry point whose users mean that by top_p 0 (the OpenAI API,
// the CLI) passes, since the zero value of TopP is unset. (A normal float: a device may flush
// subnormals to zero, which would turn the nucleus off.)
const SmallestTopP = 1e-30

// Speculate sets the request's speculation as the APIs' "speculative" object gives it:
// num_speculative_tokens nil (the engine's k), 0 (none) or a cap on the drafts a step; fixed
// drafts that many every step, paying or not.
func (o *GenerateOptions) Speculate(k *int, fixed bool) {
	o.FixedSpeculation = fixed
	switch {
	case k == nil:
	case *k == 0:
		o.NoSpeculation = true
	default:
		o.NumSpeculativeTokens = *k
	}
}

// Limits of a request's options.
const (
	MaxStops        = 16  // stop strings
	MaxStopTokenIDs = 64  // stop token ids
	MaxStopBytes    = 256 // bytes of one stop string
	MaxLogitBias    = 300 // logit bias entries (OpenAI's limit)
	MaxTopLogprobs  = batch.MaxTopLogprobs
)

// Validate is the one check of a generation's options: every value out of range is an
// *InvalidError naming its parameter. It fills the defaults the values' spellings leave open
// (TopK -1 is 0; TopLogprobs implies Logprobs). vocab is the model's vocabulary size, which
// bounds TopK and the logit bias's token ids; 0 skips those bounds (a caller checking its
// flags before the model loads). Engine.NewRequest calls it; nothing after it checks the
// options again.
func (o *GenerateOptions) Validate(vocab int) error {
	for i := range SamplingParams {
		p := &SamplingParams[i]
		if err := p.Check(p.get(&o.Sampling), vocab); err != nil {
			return err
		}
	}
	switch {
	case o.MaxTokens < 0:
		return invalid("max_tokens", "max_tokens %d: want at least 1 (or 0, unset: until the context is full)", o.MaxTokens)
	case len(o.LogitBias) > MaxLogitBias:
		return invalid("logit_bias", "logit_bias: %d entries, at most %d", len(o.LogitBias), MaxLogitBias)
	case o.TopLogprobs < 0 || o.TopLogprobs > MaxTopLogprobs:
		return invalid("top_logprobs", "top_logprobs %d: want 0..%d", o.TopLogprobs, MaxTopLogprobs)
	case o.PromptTopLogprobs < 0 || o.PromptTopLogprobs > MaxTopLogprobs:
		return invalid("prompt_logprobs", "prompt_logprobs %d: want 0..%d", o.PromptTopLogprobs, MaxTopLogprobs)
	case o.ScoreOnly && !(o.PromptLogprobs || o.PromptTopLogprobs > 0):
		return invalid("max_tokens", "max_tokens 0 generates nothing: it needs the prompt scored (echo with logprobs, or prompt_logprobs)")
	case o.ScoreOnly && o.MinTokens > 0:
		return invalid("min_tokens", "min_tokens %d with max_tokens 0", o.MinTokens)
	case o.NumSpeculativeTokens < 0 || o.NumSpeculativeTokens > spec.MaxSpeculativeTokens:
		return invalid("num_speculative_tokens", "num_speculative_tokens %d: want 1..%d (0: the engine's)", o.NumSpeculativeTokens, spec.MaxSpeculativeTokens)
	case o.FixedSpeculation && o.NoSpeculation:
		return invalid("num_speculative_tokens", "fixed speculation with speculation off (num_speculative_tokens 0): nothing to fix")
	case len(o.Stop) > MaxStops:
		return invalid("stop", "stop: %d strings, at most %d", len(o.Stop), MaxStops)
	case len(o.StopTokenIDs) > MaxStopTokenIDs:
		return invalid("stop_token_ids", "stop_token_ids: %d ids, at most %d", len(o.StopTokenIDs), MaxStopTokenIDs)
	case o.MinTokens < 0 || (o.MaxTokens > 0 && o.MinTokens > o.MaxTokens):
		return invalid("min_tokens", "min_tokens %d: want 0..max_tokens (%d)", o.MinTokens, o.MaxTokens)
	case o.TruncatePromptTokens < -1:
		return invalid("truncate_prompt_tokens", "truncate_prompt_tokens %d: want -1 (the context), 0 (off) or at least 1", o.TruncatePromptTokens)
	}
	if o.Structured != nil {
		if err := o.Structured.Validate(); err != nil {
			return invalid("structured_outputs", "structured_outputs: %v", err)
		}
	}
	for _, tok := range o.StopTokenIDs {
		if tok < 0 || (vocab > 0 && tok >= vocab) {
			return invalid("stop_token_ids", "stop_token_ids: %d is not a token id of the vocabulary (0..%d)", tok, vocab-1)
		}
	}
	for tok, b := range o.LogitBias {
		switch {
		case tok < 0 || (vocab > 0 && tok >= vocab):
			return invalid("logit_bias", "logit_bias: token %d is not a token id of the vocabulary (0..%d)", tok, vocab-1)
		case !finiteIn(b, -100, 100):
			return invalid("logit_bias", "logit_bias: %v for token %d, want a value in [-100, 100]", b, tok)
		}
	}
	for _, s := range o.Stop {
		if s == "" || len(s) > MaxStopBytes || !utf8.ValidString(s) {
			return invalid("stop", "stop: each string must be valid UTF-8 of 1..%d bytes, got %q", MaxStopBytes, s)
		}
	}
	o.TopK = max(o.TopK, 0)
	o.Logprobs = o.Logprobs || o.TopLogprobs > 0
	o.PromptLogprobs = o.PromptLogprobs || o.PromptTopLogprobs > 0
	return nil
}

// finiteIn reports whether v is a finite value in [lo, hi].
func finiteIn(v float32, lo, hi float64) bool {
	f := float64(v)
	return !math.IsNaN(f) && f >= lo && f <= hi
}

// Prompt is what a generation continues: text, which the engine tokenizes (adding the
// tokenizer's BOS), or token ids, taken as they are. Exactly one of them.
type Prompt struct {
	Text   string
	Tokens []int
}

// Request is a validated generation: its prompt's token ids and its options, checked once by
// NewRequest. Run it (several times with different choices, for OpenAI's n).
type Request struct {
	Prompt []int
	opts   GenerateOptions
	k      int // draft tokens per step at most (0: none)
	maxNew int
	g      *grammar.Grammar // the structured output's, compiled (nil: none)
}

// NewRequest tokenizes p (once) and validates o for this engine's model: every error wraps
// ErrInvalid (as an *InvalidError) or ErrPromptTooLong (as a *PromptTooLongError). Compiling
// a structured output stops when ctx ends (its client went away).
func (e *Engine) NewRequest(ctx context.Context, p Prompt, o GenerateOptions) (*Request, error) {
	if err := o.Validate(e.cfg.Vocab); err != nil {
		return nil, err
	}
	k := 0
	switch {
	case o.NoSpeculation:
	case e.method == nil && (o.NumSpeculativeTokens > 0 || o.FixedSpeculation):
		return nil, invalid("num_speculative_tokens", "num_speculative_tokens %d (fixed %v): the engine was loaded without a speculative method", o.NumSpeculativeTokens, o.FixedSpeculation)
	case e.method != nil:
		k = e.k
		if o.NumSpeculativeTokens > 0 {
			k = min(k, o.NumSpeculativeTokens)
		}
	}
	var ids []int
	switch {
	case p.Text != "" && p.Tokens != nil:
		return nil, invalid("prompt", "a prompt of text and token ids: give one of them")
	case p.Tokens != nil:
		for _, t := range p.Tokens {
			if t < 0 || t >= e.cfg.Vocab {
				return nil, invalid("prompt", "prompt: token id %d outside the vocabulary (0..%d)", t, e.cfg.Vocab-1)
			}
		}
		ids = p.Tokens
	default:
		if !utf8.ValidString(p.Text) {
			return nil, invalid("prompt", "prompt: not valid UTF-8")
		}
		// A text longer than the context's tokens could cover is refused before the work of
		// tokenizing it: no token stands for more than MaxPieceBytes bytes of text.
		if least := len(p.Text) / max(1, e.tok.MaxPieceBytes()); o.TruncatePromptTokens == 0 && least >= e.cfg.MaxSeq {
			return nil, &PromptTooLongError{Tokens: least, Context: e.cfg.MaxSeq, AtLeast: true}
		}
		ids = e.tok.Encode(p.Text, e.tok.AddBOS())
		// a tokenizer may hold added tokens past the embedding's rows (weights.checkVocab)
		for _, t := range ids {
			if t >= e.cfg.Vocab {
				return nil, invalid("prompt", "prompt: token %q (id %d) is the tokenizer's but past the model's %d embedding rows", e.tok.Piece(t), t, e.cfg.Vocab)
			}
		}
	}
	if n := o.TruncatePromptTokens; n != 0 {
		if n < 0 {
			n = e.cfg.MaxSeq - max(1, o.MaxTokens)
		}
		if len(ids) > n {
			ids = ids[len(ids)-n:]
		}
	}
	switch {
	case len(ids) == 0:
		return nil, invalid("prompt", "prompt: empty (and the tokenizer adds no BOS)")
	case len(ids) >= e.cfg.MaxSeq:
		return nil, &PromptTooLongError{Tokens: len(ids), Context: e.cfg.MaxSeq}
	}
	maxNew := e.cfg.MaxSeq // unset: the scheduler stops at the end of the context
	if o.MaxTokens > 0 {
		maxNew = o.MaxTokens
	}
	if o.ScoreOnly {
		maxNew = 0
	}
	var g *grammar.Grammar
	if o.Structured != nil {
		var err error
		if g, err = e.grammars().Get(ctx, *o.Structured); err != nil {
			return nil, invalid("structured_outputs", "structured_outputs: %v", err)
		}
	}
	return &Request{Prompt: ids, opts: o, k: k, maxNew: maxNew, g: g}, nil
}

// MaxTokens is the request's max_tokens (0: unset).
func (r *Request) MaxTokens() int { return r.opts.MaxTokens }

// WithChoice is a copy of r for choice i of its prompt (a key of the sampler's random
// numbers: choices differ, each reproducible) streaming its text to onText.
func (r *Request) WithChoice(i int, onText func(string)) *Request {
	c := *r
	c.opts.Choice, c.opts.OnText = uint32(i), onText
	return &c
}
