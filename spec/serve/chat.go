package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/spec/toolcall"
	"github.com/wspec/wspec/weights/chat"
)

// handleChat serves POST /v1/chat/completions: the messages go through the model's chat
// template, and the prompt it renders is generated from as a completion is.
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	rq, err := s.chatRequest(r.Context(), &req)
	if err != nil {
		writeError(w, err)
		return
	}
	s.reply(w, r, rq, "chatcmpl-", func(id string, created int64) replier {
		c := &chatReplier{s: s, id: id, created: created, rq: rq, logprobs: req.Logprobs, promptLogprobs: req.PromptLogprobs != nil}
		for range len(rq.prompts) * rq.n {
			c.outs = append(c.outs, s.newChatOutput(rq.tools))
		}
		return c
	})
}

// chatRoles are the message roles a chat may have.
var chatRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true}

// templateReserved are the chat template's own variables, which chat_template_kwargs cannot set.
var templateReserved = map[string]bool{"messages": true, "tools": true, "documents": true, "add_generation_prompt": true,
	"continue_final_message": true, "bos_token": true, "eos_token": true, "raise_exception": true, "strftime_now": true}

// chatFromBody is chatRequest of a chat completions body another endpoint built (the
// Responses and Messages APIs, /tokenize with messages).
func (s *Server) chatFromBody(ctx context.Context, body []byte) (*request, error) {
	var creq chatRequest
	if err := json.Unmarshal(body, &creq); err != nil {
		return nil, jsonError(err)
	}
	if err := readSampling(body, &creq); err != nil {
		return nil, err
	}
	return s.chatRequest(ctx, &creq)
}

// Bounds on a chat checked before its template runs: past them a render would only end at the
// template's own step limit, a 500 that clients send again.
const (
	MaxMessages = 4096
	MaxTools    = 128
)

// chatRequest validates a chat request and renders its prompt (until ctx ends).
func (s *Server) chatRequest(ctx context.Context, req *chatRequest) (*request, error) {
	done := ctx.Done()
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
	case len(req.Messages) > MaxMessages:
		return nil, invalid("messages", codeInvalidValue, "messages: %d messages (at most %d)", len(req.Messages), MaxMessages)
	case len(req.Tools) > MaxTools:
		return nil, invalid("tools", codeInvalidValue, "tools: %d tools (at most %d, as OpenAI allows)", len(req.Tools), MaxTools)
	case req.TopLogprobs != nil && !req.Logprobs:
		return nil, invalid("top_logprobs", codeInvalidValue, "top_logprobs: needs logprobs to be true")
	}
	plan, err := s.toolPlan(req)
	if err != nil {
		return nil, err
	}
	rq.tools = plan
	if plan.force != nil {
		if o.Structured != nil {
			return nil, invalid("tool_choice", codeInvalidValue, "tool_choice: a required or named tool choice writes the reply under its own schema; %s cannot be set as well", rq.params["structured_outputs"])
		}
		o.Structured = plan.force
		rq.params["structured_outputs"] = "tool_choice"
	}
	if plan.mode == toolsAuto && toolcall.SpecialMarker(s.cfg.ToolCallParser) {
		o.KeepSpecialTokens = true // the parser's marker is a special token
	}
	in, err := s.templateInput(req)
	if err != nil {
		return nil, err
	}
	in.Done = done
	if req.Logprobs {
		o.Logprobs = true
		if req.TopLogprobs != nil {
			o.TopLogprobs = *req.TopLogprobs
		}
	}
	prompt, err := s.tpl.Render(in)
	if err != nil {
		if errors.Is(err, chat.ErrRaised) {
			return nil, invalid("messages", codeInvalidValue, "messages: the model's chat template refused them: %s", strings.TrimPrefix(err.Error(), chat.ErrRaised.Error()+": "))
		}
		if errors.Is(err, chat.ErrLimit) {
			return nil, &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: codeInternal,
				Message: fmt.Sprintf("the model's chat template failed on these messages: %v", err)}
		}
		// a value the template cannot take is named by the field it came from
		for _, p := range []string{"chat_template_kwargs", "tools", "documents"} {
			if strings.HasPrefix(err.Error(), p) {
				return nil, invalid(p, codeInvalidValue, "%v", err)
			}
		}
		return nil, invalid("messages", codeInvalidValue, "messages: %v", err)
	}
	if err := s.prepare(ctx, rq, []engine.Prompt{{Text: prompt}}, o); err != nil {
		return nil, err
	}
	return rq, nil
}

// templateInput checks the messages and the template's other inputs, and turns them into the
// chat template's input as vLLM hands them over: an assistant message's calls with their
// arguments as objects, reasoning_effort as a variable beside chat_template_kwargs.
func (s *Server) templateInput(req *chatRequest) (chat.Input, error) {
	in := chat.Input{AddGenerationPrompt: req.AddGenerationPrompt == nil || *req.AddGenerationPrompt,
		ContinueFinalMessage: req.ContinueFinalMessage, Documents: req.Documents, Vars: map[string]json.RawMessage{}}
	if req.ContinueFinalMessage && req.AddGenerationPrompt != nil && *req.AddGenerationPrompt {
		return in, invalid("continue_final_message", codeInvalidValue, "continue_final_message: cannot be set with add_generation_prompt true")
	}
	if req.ContinueFinalMessage {
		in.AddGenerationPrompt = false
	}
	for k, v := range req.ChatTemplateKwargs {
		if templateReserved[k] {
			return in, invalid("chat_template_kwargs", codeInvalidValue, "chat_template_kwargs: %q is the template's own variable; set it with its own field", k)
		}
		in.Vars[k] = v
	}
	if req.ReasoningEffort != nil {
		in.Vars["reasoning_effort"], _ = json.Marshal(*req.ReasoningEffort)
	}
	if len(req.Tools) > 0 {
		raws := make([]json.RawMessage, len(req.Tools))
		for i, t := range req.Tools {
			raws[i] = t.raw
		}
		in.Tools, _ = json.Marshal(raws)
	}
	for i, m := range req.Messages {
		if !chatRoles[m.Role] {
			return in, invalid("messages", codeInvalidValue, "messages[%d].role %q: want system, developer, user, assistant or tool", i, m.Role)
		}
		if (m.Content.null || !m.Content.set) && m.Role != "assistant" {
			return in, invalid("messages", codeInvalidValue, "messages[%d].content: required for a %s message", i, m.Role)
		}
		if len(m.ToolCalls) > 0 && m.Role != "assistant" {
			return in, invalid("messages", codeInvalidValue, "messages[%d].tool_calls: only an assistant message has tool calls", i)
		}
		msg := chat.Message{Role: m.Role, Content: m.Content.text, Name: m.Name, ToolCallID: m.ToolCallID}
		for _, r := range []*string{m.ReasoningContent, m.Reasoning} {
			if r != nil && msg.Reasoning == "" {
				msg.Reasoning = *r
			}
		}
		for j, c := range m.ToolCalls {
			if c.Function.Name == "" {
				return in, invalid("messages", codeMissing, "messages[%d].tool_calls[%d].function.name: required", i, j)
			}
			args := string(c.Function.Arguments)
			var text string
			if json.Unmarshal(c.Function.Arguments, &text) == nil {
				args = text
			}
			msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args})
		}
		in.Messages = append(in.Messages, msg)
	}
	return in, nil
}

// chatReplier builds chat replies and stream chunks.
type chatReplier struct {
	s        *Server
	id       string
	created  int64
	rq       *request
	logprobs bool
	outs     []*chatOutput // per choice index
	// promptLogprobs: prompt_logprobs asked for (not streamed, as in vLLM)
	promptLogprobs bool
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
	thought, content, calls := c.outs[ch.index].push(text)
	c.send(sw, ch.index, thought, content, calls)
	c.outs[ch.index].writing(func(n int, name, args string) { c.sendCall(sw, ch.index, n, name, args) })
}

// sendCall streams what call n of a choice adds: the first time, a delta with its index, id,
// type, name and empty arguments; then its arguments as they grow, as OpenAI and vLLM stream
// them (the pieces add up to the whole call's arguments).
func (c *chatReplier) sendCall(sw *sseWriter, index, n int, name, args string) {
	head, more := c.outs[index].callDelta(n, args)
	if head {
		h := toolCallOut{Index: &n, ID: c.s.toolCallID(), Type: "function"}
		h.Function.Name = name
		sw.send(c.chunk(chatChunkChoice{Index: index, Delta: chatDelta{ToolCalls: []toolCallOut{h}}}))
	}
	if more != "" {
		a := toolCallOut{Index: &n}
		a.Function.Arguments = more
		sw.send(c.chunk(chatChunkChoice{Index: index, Delta: chatDelta{ToolCalls: []toolCallOut{a}}}))
	}
}

// send streams a choice's new reasoning, content and complete calls (what of each call its
// stream has not sent yet).
func (c *chatReplier) send(sw *sseWriter, index int, thought, content string, calls []toolcall.Call) {
	if thought != "" || content != "" {
		d := chatDelta{}
		if thought != "" {
			d.ReasoningContent = &thought
		}
		if content != "" {
			d.Content = &content
		}
		sw.send(c.chunk(chatChunkChoice{Index: index, Delta: d}))
	}
	c.outs[index].done(calls, func(n int, name, args string) { c.sendCall(sw, index, n, name, args) })
}

// end sends what the choice's text held back, then its finish_reason (tool_calls when it
// called any) with an empty delta, and its logprobs when asked for (all of them in this last
// chunk: the engine gives them at the end).
func (c *chatReplier) end(sw *sseWriter, ch *choice) {
	thought, content, calls := c.outs[ch.index].finish()
	c.send(sw, ch.index, thought, content, calls)
	fr := finishReason(ch.res.Finish)
	if c.outs[ch.index].sent > 0 {
		fr = "tool_calls"
	}
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
		o := c.outs[ch.index]
		t1, c1, calls := o.push(ch.res.Text)
		t2, c2, rest := o.finish()
		thought, content := t1+t2, c1+c2
		calls = append(calls, rest...)
		msg := chatOut{Role: "assistant"}
		if content != "" || len(calls) == 0 {
			msg.Content = &content
		}
		if thought != "" {
			msg.ReasoningContent = &thought
		}
		fr := finishReason(ch.res.Finish)
		for _, call := range calls {
			tc := toolCallOut{ID: c.s.toolCallID(), Type: "function"}
			tc.Function.Name, tc.Function.Arguments = call.Name, call.Arguments
			msg.ToolCalls = append(msg.ToolCalls, tc)
			fr = "tool_calls"
		}
		rep.Choices = append(rep.Choices, chatChoice{Index: ch.index, Message: msg, FinishReason: fr, Logprobs: c.s.chatLogprobsOf(ch.res, c.logprobs)})
	}
	if len(choices) > 0 {
		rep.PromptLogprobs = c.s.promptLogprobsOf(choices[0].res, c.promptLogprobs)
	}
	return rep
}
