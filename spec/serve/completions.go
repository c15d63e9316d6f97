package serve

import (
	"context"
	"net/http"
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
	s.reply(w, r, rq, "cmpl-", func(id string, created int64) replier {
		return &completionReplier{s: s, id: id, created: created, rq: rq, logprobs: req.Logprobs != nil}
	})
}

// completionRequest validates a completions request.
func (s *Server) completionRequest(ctx context.Context, req *completionRequest) (*request, error) {
	maxTokens := req.MaxTokens
	if maxTokens == nil {
		d := defaultCompletionTokens
		maxTokens = &d
	}
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
	case req.Echo:
		return nil, invalid("echo", codeUnsupported, "echo: not supported")
	case req.Suffix != nil && *req.Suffix != "":
		return nil, invalid("suffix", codeUnsupported, "suffix: not supported")
	case req.BestOf != nil && *req.BestOf != rq.n:
		return nil, invalid("best_of", codeUnsupported, "best_of: only equal to n (%d) is supported", rq.n)
	}
	if req.Logprobs != nil {
		o.Logprobs, o.TopLogprobs = true, *req.Logprobs
	}
	if err := s.prepare(ctx, rq, req.Prompt.prompts, o); err != nil {
		return nil, err
	}
	return rq, nil
}

// completionReplier builds completions replies and stream chunks.
type completionReplier struct {
	s        *Server
	id       string
	created  int64
	rq       *request
	logprobs bool
}

// chunk is a reply (or a stream event: the same object) holding ch.
func (c *completionReplier) chunk(ch ...completionChoice) completionReply {
	return completionReply{ID: c.id, Object: "text_completion", Created: c.created, Model: c.s.name, Choices: ch}
}

func (c *completionReplier) start(*sseWriter) {}

func (c *completionReplier) text(sw *sseWriter, ch *choice, text string) {
	sw.send(c.chunk(completionChoice{Index: ch.index, Text: text}))
}

func (c *completionReplier) end(sw *sseWriter, ch *choice) {
	fr := finishReason(ch.res.Finish)
	sw.send(c.chunk(completionChoice{Index: ch.index, FinishReason: &fr, Logprobs: c.s.completionLogprobsOf(ch.res, c.logprobs)}))
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
		rep.Choices = append(rep.Choices, completionChoice{Index: ch.index, Text: ch.res.Text, FinishReason: &fr,
			Logprobs: c.s.completionLogprobsOf(ch.res, c.logprobs)})
	}
	return rep
}
