package engine

import (
	"context"
	"errors"
	"time"

	"github.com/wspec/wspec/runtime/batch"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/sched"
)

// TokenLogprob is one generated token's log-probability and, when asked for, the likeliest
// tokens' at its position (most likely first).
type TokenLogprob struct {
	Token   int
	Logprob float32
	Rank    int // 1 + the tokens more likely at its position
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
	StopString   string            // the stop string that ended it ("" for none: vLLM's stop_reason)
	Queued       time.Duration     // waiting for a place in the batch
	Prefill      time.Duration     // from the request to its first token
	Decode       time.Duration     // the rest
	Metrics      spec.Metrics      // what speculation did
	Preempted    int               // times its KV pages were taken back and recomputed
	Logprobs     []TokenLogprob    // one per token of Tokens, when asked for
	// PromptLogprobs, with GenerateOptions.PromptLogprobs, are PromptTokens[1:]'s.
	PromptLogprobs []TokenLogprob
}

// Generate tokenizes prompt and generates after it (NewRequest, then Run).
func (e *Engine) Generate(ctx context.Context, prompt string, o GenerateOptions) (*Result, error) {
	if e.isClosed() {
		return nil, ErrClosed
	}
	r, err := e.NewRequest(ctx, Prompt{Text: prompt}, o)
	if err != nil {
		return nil, err
	}
	return e.Run(ctx, r)
}

// Run decodes r's new tokens (with speculation when the engine has a method and r does not
// turn it off) and streams the text. The engine's scheduler runs it in steps shared with the
// other generations. Cancelling ctx stops it within one step: the result then holds the
// tokens so far and says FinishCancelled (not an error).
func (e *Engine) Run(ctx context.Context, r *Request) (*Result, error) {
	if e.isClosed() {
		return nil, ErrClosed
	}
	o := r.opts
	start := time.Now()
	ts := newTextStream(e.tok, o, o.OnText)
	var stop []int
	if !o.IgnoreEOS {
		stop = append(stop, e.cfg.EOS...)
	}
	stop = append(stop, o.StopTokenIDs...)
	sr := &sched.Request{Ctx: ctx, Prompt: r.Prompt, MaxNew: r.maxNew, Sampling: o.Sampling,
		Stop: stop, MinNew: o.MinTokens, K: r.k, FixedK: o.FixedSpeculation,
		OneHotDrafts: o.OneHotDrafts, Emit: ts.push, ScorePrompt: o.PromptLogprobs, PromptTop: o.PromptTopLogprobs}
	if r.g != nil {
		sr.Grammar = r.g.NewMatcher()
	}
	resc := e.sched.Submit(sr)
	var res sched.Result
	for done := false; !done; {
		select {
		case <-ts.wake:
			ts.flush(false)
		case res = <-resc:
			done = true
		}
	}
	if res.Err != nil {
		if errors.Is(res.Err, sched.ErrClosed) {
			return nil, ErrClosed
		}
		return nil, res.Err
	}
	ts.flush(true)
	end := time.Now()
	out := &Result{PromptTokens: r.Prompt, Tokens: res.Tokens, Text: ts.text.String(), Finish: res.Finish,
		Queued: res.Queued, Metrics: res.Metrics, Preempted: res.Preempted}
	if ts.matched {
		out.Tokens, out.Finish, out.StopString = res.Tokens[:min(ts.kept, len(res.Tokens))], spec.FinishStop, ts.matchedStop
	}
	if o.Logprobs {
		out.Logprobs = engineLogprobs(out.Tokens, res.Logprobs)
	}
	if o.PromptLogprobs {
		out.PromptLogprobs = engineLogprobs(r.Prompt[1:], res.PromptLogprobs)
	}
	out.Prefill = res.FirstToken
	if res.FirstToken == 0 {
		out.Prefill = end.Sub(start)
	}
	out.Decode = end.Sub(start) - out.Prefill
	return out, nil
}

// engineLogprobs pairs tokens with the scheduler's logprobs of them.
func engineLogprobs(tokens []int, lps []batch.TokenLogprob) []TokenLogprob {
	out := make([]TokenLogprob, min(len(tokens), len(lps)))
	for i := range out {
		out[i] = TokenLogprob{Token: tokens[i], Logprob: lps[i].Logprob, Rank: lps[i].Rank}
		for _, t := range lps[i].Top {
			out[i].Top = append(out[i].Top, TopLogprob{Token: t.Token, Logprob: t.Logprob})
		}
	}
	return out
}
