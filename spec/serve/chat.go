package serve

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/wspec/wspec/spec/engine"
)

// handleChat serves POST /v1/chat/completions: the messages go through the model's chat
// template, and the prompt it renders is generated from as a completion is.
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	rq, err := s.chatRequest(&req)
	if err != nil {
		writeError(w, err)
		return
	}
	s.reply(w, r, rq, "chatcmpl-", func(id string, created int64) replier {
		return &chatReplier{s: s, id: id, created: created, rq: rq, logprobs: req.Logprobs}
	})
}

// chatRoles are the message roles a chat may have (tool and function messages need tools,
// which this server does not run).
var chatRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true}

// chatRequest validates a chat request and renders its prompt.
func (s *Server) chatRequest(req *chatRequest) (*request, error) {
	maxTokens, maxParam := req.MaxCompletionTokens, "max_completion_tokens"
	if maxTokens == nil {
		maxTokens, maxParam = req.MaxTokens, "max_tokens"
	}
	rq, o, err := s.options(&req.samplingFields, maxTokens, maxParam)
	if err != nil {
		return nil, err
	}
	rq.promptParam = "messages"
	rq.params["num_speculative_tokens"] = "speculative"
	switch {
	case len(req.Messages) == 0:
		return nil, invalid("messages", codeMissing, "messages: want at least one message")
	case req.TopLogprobs != nil && !req.Logprobs:
		return nil, invalid("top_logprobs", codeInvalidValue, "top_logprobs: needs logprobs to be true")
	case len(req.Tools) > 0:
		return nil, invalid("tools", codeUnsupported, "tools: not supported")
	case len(req.ToolChoice) > 0 && string(req.ToolChoice) != "null" && !rawIsString(req.ToolChoice, "none"):
		return nil, invalid("tool_choice", codeUnsupported, "tool_choice: only \"none\" is supported")
	}
	for i, m := range req.Messages {
		if !chatRoles[m.Role] {
			return nil, invalid("messages", codeInvalidValue, "messages[%d].role %q: want system, developer, user or assistant", i, m.Role)
		}
		if m.Content.null && m.Role != "assistant" {
			return nil, invalid("messages", codeInvalidValue, "messages[%d].content: required for a %s message", i, m.Role)
		}
	}
	if req.Logprobs {
		o.Logprobs = true
		if req.TopLogprobs != nil {
			o.TopLogprobs = *req.TopLogprobs
		}
	}
	prompt, err := s.tpl.render(req.Messages)
	if err != nil {
		var te *errTemplate
		if errors.As(err, &te) {
			return nil, invalid("messages", codeInvalidValue, "messages: the model's chat template refused them: %s", te.msg)
		}
		return nil, invalid("messages", codeInvalidValue, "messages: %v", err)
	}
	if err := s.prepare(rq, []engine.Prompt{{Text: prompt}}, o); err != nil {
		return nil, err
	}
	return rq, nil
}

// chatReplier builds chat replies and stream chunks.
type chatReplier struct {
	s        *Server
	id       string
	created  int64
	rq       *request
	logprobs bool
}

func (c *chatReplier) chunk(ch ...chatChunkChoice) chatChunk {
	return chatChunk{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.s.name, Choices: ch}
}

// start sends each choice's first chunk: the assistant's role and empty content.
func (c *chatReplier) start(sw *sseWriter) {
	empty := ""
	for i := 0; i < len(c.rq.prompts)*c.rq.n; i++ {
		sw.send(c.chunk(chatChunkChoice{Index: i, Delta: chatDelta{Role: "assistant", Content: &empty}}))
	}
}

func (c *chatReplier) text(sw *sseWriter, ch *choice, text string) {
	sw.send(c.chunk(chatChunkChoice{Index: ch.index, Delta: chatDelta{Content: &text}}))
}

// end sends the choice's finish_reason with an empty delta, and its logprobs when asked for
// (all of them in this last chunk: the engine gives them at the end).
func (c *chatReplier) end(sw *sseWriter, ch *choice) {
	fr := finishReason(ch.res.Finish)
	sw.send(c.chunk(chatChunkChoice{Index: ch.index, FinishReason: &fr, Logprobs: c.s.chatLogprobsOf(ch.res, c.logprobs)}))
}

func (c *chatReplier) usageChunk(u usage) any {
	rep := c.chunk()
	rep.Choices = []chatChunkChoice{}
	rep.Usage = &u
	return rep
}

func (c *chatReplier) whole(choices []*choice, u usage) any {
	rep := chatReply{ID: c.id, Object: "chat.completion", Created: c.created, Model: c.s.name, Usage: u}
	for _, ch := range choices {
		rep.Choices = append(rep.Choices, chatChoice{Index: ch.index, Message: chatOut{Role: "assistant", Content: ch.res.Text},
			FinishReason: finishReason(ch.res.Finish), Logprobs: c.s.chatLogprobsOf(ch.res, c.logprobs)})
	}
	return rep
}

// rawIsString reports whether a raw JSON value is the string s.
func rawIsString(raw json.RawMessage, s string) bool {
	var v string
	return json.Unmarshal(raw, &v) == nil && strings.EqualFold(v, s)
}
