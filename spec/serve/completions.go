package serve

import (
	"context"
	"net/http"

	"github.com/wspec/wspec/spec/engine"
)

// defaultCompletionTokens is OpenAI's max_tokens for completions when a request sets none.
const defaultCompletionTokens = 16

// handleCompletions serves POST /v1/completions.
func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	rq, err := s.completionRequest(r.Context(), &req)
	if err != nil {
		writeError(w, err)
		return
	}
	c := &completionReplier{s: s, rq: rq, logprobs: req.Logprobs, promptLogprobs: req.PromptLogprobs != nil}
	if req.Echo {
		for i, p := range req.Prompt.prompts {
			c.echo = append(c.echo, s.echoText(p, rq.prompts[i], req.TruncatePromptTokens != 0))
		}
	}
	s.reply(w, r, rq, "cmpl-", func(id string, created int64) replier {
		c.id, c.created = id, created
		return c
	})
}

// completionRequest validates a completions request.
func (s *Server) completionRequest(ctx context.Context, req *completionRequest) (*request, error) {
	maxTokens := req.MaxTokens
	if maxTokens == nil {
		d := defaultCompletionTokens
		maxTokens = &d
	}
	req.samplingFields.echo = req.Echo
	rq, o, err := s.options(&req.samplingFields, maxTokens, "max_tokens")
	if err != nil {
		return nil, err
	}
	rq.promptParam = "prompt"
	rq.params["top_logprobs"], rq.params["num_speculative_tokens"] = "logprobs", "speculative"
	switch {
	case !req.Prompt.set:
		return nil, invalid("prompt", codeMissing, "prompt: required")
	case len(req.Prompt.prompts) == 0:
		return nil, invalid("prompt", codeInvalidValue, "prompt: an empty list")
	case len(req.Prompt.prompts)*rq.n > MaxChoices:
		return nil, invalid("n", codeInvalidValue, "%d prompts x n %d: at most %d choices a request", len(req.Prompt.prompts), rq.n, MaxChoices)
	case req.Suffix != nil && *req.Suffix != "":
		return nil, invalid("suffix", codeUnsupported, "suffix: not supported")
	case req.BestOf != nil && *req.BestOf != rq.n:
		return nil, invalid("best_of", codeUnsupported, "best_of: only equal to n (%d) is supported", rq.n)
	}
	if req.Logprobs != nil {
		o.Logprobs, o.TopLogprobs = true, *req.Logprobs
	}
	if req.Echo && (req.Logprobs != nil || o.ScoreOnly) { // the prompt's tokens are listed too
		o.PromptLogprobs, o.PromptTopLogprobs = true, max(o.PromptTopLogprobs, o.TopLogprobs)
	}
	if err := s.prepare(ctx, rq, req.Prompt.prompts, o); err != nil {
		return nil, err
	}
	return rq, nil
}

// completionReplier builds completions replies and stream chunks.
type completionReplier struct {
	s              *Server
	id             string
	created        int64
	rq             *request
	logprobs       *int     // the request's logprobs (nil: none)
	echo           []string // with echo: each prompt's text
	promptLogprobs bool     // prompt_logprobs asked for
}

// chunk is a reply (or a stream event: the same object) holding ch.
func (c *completionReplier) chunk(ch ...completionChoice) completionReply {
	return completionReply{ID: c.id, Object: "text_completion", Created: c.created, Model: c.s.name, Choices: ch}
}

func (c *completionReplier) start(sw *sseWriter) {
	for p, text := range c.echo {
		for i := range c.rq.n {
			sw.send(c.chunk(completionChoice{Index: p*c.rq.n + i, Text: text}))
		}
	}
}

func (c *completionReplier) text(sw *sseWriter, ch *choice, text string) {
	sw.send(c.chunk(completionChoice{Index: ch.index, Text: text}))
}

func (c *completionReplier) end(sw *sseWriter, ch *choice) {
	fr := finishReason(ch.res.Finish)
	sw.send(c.chunk(completionChoice{Index: ch.index, FinishReason: &fr, Logprobs: c.logprobsOf(ch)}))
}

func (c *completionReplier) usageChunk(u usage) any {
	rep := c.chunk()
	rep.Choices = []completionChoice{}
	rep.Usage = &u
	return rep
}

func (c *completionReplier) whole(choices []*choice, u usage) any {
	rep := c.chunk()
	rep.Usage = &u
	for _, ch := range choices {
		fr := finishReason(ch.res.Finish)
		text := ch.res.Text
		if c.echo != nil {
			text = c.echo[ch.prompt] + text
		}
		rep.Choices = append(rep.Choices, completionChoice{Index: ch.index, Text: text, FinishReason: &fr,
			Logprobs: c.logprobsOf(ch), PromptLogprobs: c.s.promptLogprobsOf(ch.res, c.promptLogprobs)})
	}
	return rep
}

// logprobsOf is a choice's logprobs (nil when none were asked for): with echo, its prompt's
// tokens first.
func (c *completionReplier) logprobsOf(ch *choice) *completionLogprobs {
	if c.logprobs == nil {
		return nil
	}
	if c.echo == nil {
		return c.s.completionLogprobsOf(ch.res.Logprobs, 0)
	}
	res := ch.res
	first := engine.TokenLogprob{Token: res.PromptTokens[0]}
	lps := append(append([]engine.TokenLogprob{first}, res.PromptLogprobs...), res.Logprobs...)
	lp := c.s.completionLogprobsOf(lps, 0)
	lp.TokenLogprobs[0], lp.TopLogprobs[0] = nil, nil        // nothing comes before the first token
	for i := range lp.TopLogprobs[1:len(res.PromptTokens)] { // prompt_logprobs may have asked for more
		lp.TopLogprobs[1+i] = c.s.topOf(res.PromptLogprobs[i].Top[:min(*c.logprobs, len(res.PromptLogprobs[i].Top))])
	}
	return lp
}
