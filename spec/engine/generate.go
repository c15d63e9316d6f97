package engine

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/weights"
)

// GenerateOptions are the sampling and speculation settings of one generation. The zero
// value is greedy decoding until the context is full, with the engine's speculation.
type GenerateOptions struct {
	MaxTokens   int     // new tokens at most; 0: until the context is full (OpenAI's null)
	Temperature float32 // 0: greedy; otherwise finite and > 0
	TopP        float32 // nucleus threshold in (0, 1]; 0 is unset, which means 1 (off)
	TopK        int     // keep the k most likely tokens; 0 or -1 (vLLM's spelling): off
	Seed        uint64  // the same seed and settings give the same text

	// Speculation: the engine's method drafts NumSpeculativeTokens per step (0: the
	// engine's k, the most; at most spec.MaxSpeculativeTokens), unless NoSpeculation.
	NumSpeculativeTokens int
	NoSpeculation        bool

	OnText func(string) // streamed text, as complete UTF-8
}

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
	}
	return nil
}

// Result is a finished generation.
type Result struct {
	PromptTokens []int
	Tokens       []int             // generated, without the stop token
	Text         string            // the generated text as streamed (it continues the prompt)
	Finish       spec.FinishReason // why it ended
	Prefill      time.Duration     // prompt processing up to the first token
	Decode       time.Duration     // the rest
	Metrics      spec.Metrics      // what speculation did
}

// Generate encodes prompt, decodes new tokens (with speculation when the engine has a method
// and o does not turn it off) and streams the text. Cancelling ctx stops it within one step:
// the result then holds the tokens so far and says FinishCancelled (not an error). A request
// the engine cannot serve (a bad option, a prompt that fills the context) is an error
// wrapping ErrInvalid or ErrPromptTooLong, and the engine serves the next one.
func (e *Engine) Generate(ctx context.Context, prompt string, o GenerateOptions) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if !utf8.ValidString(prompt) {
		return nil, fmt.Errorf("%w: the prompt is not valid UTF-8", ErrInvalid)
	}
	if err := e.acquire(ctx); err != nil {
		if ctx.Err() != nil {
			return &Result{Finish: spec.FinishCancelled}, nil
		}
		return nil, err
	}
	defer e.releaseLock()
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
	maxNew := e.cfg.MaxSeq // unset: Decode stops at the end of the context
	if o.MaxTokens > 0 {
		maxNew = o.MaxTokens
	}

	// Close cancels the generation too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(e.done, cancel)
	defer stop()

	sess := e.target.NewSession()
	defer sess.Release()
	var drafter spec.Drafter
	if k > 0 {
		var err error
		if drafter, err = e.method.NewDrafter(sess); err != nil {
			return nil, err
		}
		defer drafter.Release()
	}
	stream := weights.NewStreamDecoder(e.tok)
	res := &Result{PromptTokens: ids}
	start := time.Now()
	var first time.Time
	var text strings.Builder
	out := func(s string) {
		text.WriteString(s)
		if s != "" && o.OnText != nil {
			o.OnText(s)
		}
	}
	emit := func(tok int) bool {
		if first.IsZero() {
			first = time.Now()
		}
		out(stream.Push(tok))
		return true
	}
	smp := model.Sampling{Temperature: o.Temperature, TopK: max(o.TopK, 0), TopP: o.TopP, Seed: o.Seed}
	dec, err := spec.Decode(ctx, sess, drafter, ids, k, maxNew, smp, e.cfg.EOS, emit)
	out(stream.Flush())
	end := time.Now()
	if first.IsZero() {
		first = end
	}
	res.Tokens, res.Metrics, res.Finish = dec.Tokens, dec.Metrics, dec.Finish
	res.Text = text.String()
	res.Prefill, res.Decode = first.Sub(start), end.Sub(first)
	return res, err
}
