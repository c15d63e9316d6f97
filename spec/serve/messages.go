package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// POST /v1/messages, Anthropic's Messages API (what Claude Code and the Anthropic SDKs send),
// and /v1/messages/count_tokens, as a chat request underneath like the Responses API: system
// (a string or text blocks) becomes a system message; messages' content blocks (text,
// tool_use, tool_result, thinking) chat messages with their tool calls and tool results;
// tools and tool_choice (auto, any, tool, none) chat's; stop_sequences chat's stop. Errors are
// Anthropic's {"type": "error", "error": {"type", "message"}}.

type messagesRequest struct {
	Model         string            `json:"model"`
	MaxTokens     *int              `json:"max_tokens"`
	Messages      []anthropicMsg    `json:"messages"`
	System        json.RawMessage   `json:"system"`
	StopSequences []string          `json:"stop_sequences"`
	Temperature   *float64          `json:"temperature"`
	TopP          *float64          `json:"top_p"`
	TopK          *int              `json:"top_k"`
	Stream        bool              `json:"stream"`
	Tools         []json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage   `json:"tool_choice"`
	Thinking      json.RawMessage   `json:"thinking"`
	Metadata      json.RawMessage   `json:"metadata"`
	ServiceTier   json.RawMessage   `json:"service_tier"`
}

type anthropicMsg struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// anthropicBlock is one content block of a message.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	var req messagesRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		writeAnthropicError(w, err)
		return
	}
	if req.MaxTokens == nil {
		writeAnthropicError(w, invalid("max_tokens", codeMissing, "max_tokens: Field required"))
		return
	}
	rq, err := s.messagesChat(r, &req)
	if err != nil {
		writeAnthropicError(w, err)
		return
	}
	s.reply(w, r, rq, "msg_", func(id string, created int64) replier {
		rq.usage = rq.stream // the last events come where the usage chunk would
		return &messagesReplier{s: s, id: id, req: &req, out: s.newChatOutput(rq.tools), input: promptTokens(rq)}
	})
}

// handleCountTokens is POST /v1/messages/count_tokens: the prompt's tokens, template applied.
func (s *Server) handleCountTokens(w http.ResponseWriter, r *http.Request) {
	var req messagesRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		writeAnthropicError(w, err)
		return
	}
	one := 1
	req.MaxTokens, req.Stream = &one, false
	rq, err := s.messagesChat(r, &req)
	if err != nil {
		writeAnthropicError(w, err)
		return
	}
	writeJSON(w, map[string]int{"input_tokens": promptTokens(rq)})
}

func promptTokens(rq *request) int {
	n := 0
	for _, p := range rq.prompts {
		n += len(p.Prompt)
	}
	return n
}

// messagesChat validates the request as a chat request.
func (s *Server) messagesChat(r *http.Request, req *messagesRequest) (*request, error) {
	body, err := s.messagesToChat(req)
	if err != nil {
		return nil, err
	}
	return s.chatFromBody(r.Context(), body)
}

func (s *Server) messagesToChat(req *messagesRequest) ([]byte, error) {
	var msgs []any
	if sys, err := systemText(req.System); err != nil {
		return nil, err
	} else if sys != "" {
		msgs = append(msgs, map[string]any{"role": "system", "content": sys})
	}
	if len(req.Messages) == 0 {
		return nil, invalid("messages", codeMissing, "messages: at least one message is required")
	}
	for i, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, invalid("messages", codeInvalidValue, "messages.%d.role %q: want user or assistant", i, m.Role)
		}
		more, err := anthropicMessages(m, i)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, more...)
	}
	body := map[string]any{"model": req.Model, "messages": msgs, "stream": req.Stream, "max_completion_tokens": *req.MaxTokens}
	if req.Model == "" {
		body["model"] = s.name
	}
	if len(req.StopSequences) > 0 {
		body["stop"] = req.StopSequences
	}
	for k, v := range map[string]any{"temperature": req.Temperature, "top_p": req.TopP, "top_k": req.TopK} {
		if !isNilPtr(v) {
			body[k] = v
		}
	}
	tools, err := anthropicTools(req.Tools)
	if err != nil {
		return nil, err
	}
	if len(tools) > 0 {
		body["tools"] = tools
	}
	if len(req.ToolChoice) > 0 && string(req.ToolChoice) != "null" {
		var tc struct {
			Type                   string `json:"type"`
			Name                   string `json:"name"`
			DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
		}
		if err := json.Unmarshal(req.ToolChoice, &tc); err != nil {
			return nil, invalid("tool_choice", codeInvalidType, "tool_choice: want {\"type\": \"auto\" | \"any\" | \"tool\" | \"none\"}")
		}
		switch tc.Type {
		case "auto", "none":
			body["tool_choice"] = tc.Type
		case "any":
			body["tool_choice"] = "required"
		case "tool":
			if tc.Name == "" {
				return nil, invalid("tool_choice", codeMissing, "tool_choice.name: required with type tool")
			}
			body["tool_choice"] = map[string]any{"type": "function", "function": map[string]string{"name": tc.Name}}
		default:
			return nil, invalid("tool_choice", codeInvalidValue, "tool_choice.type %q: want auto, any, tool or none", tc.Type)
		}
		if tc.DisableParallelToolUse {
			body["parallel_tool_calls"] = false
		}
	}
	return json.Marshal(body)
}

func isNilPtr(v any) bool {
	switch p := v.(type) {
	case *float64:
		return p == nil
	case *int:
		return p == nil
	}
	return v == nil
}

// systemText is system as one string: a string, or its text blocks joined by newlines.
func systemText(raw json.RawMessage) (string, error) {
	return blocksText(raw, "\n", "system", "system")
}

// blocksText reads a string, or a list of text blocks joined by sep; anything else is a 400
// for param, naming the place at.
func blocksText(raw json.RawMessage, sep, param, at string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", invalid(param, codeInvalidType, "%s: want a string or a list of text blocks", at)
	}
	var b bytes.Buffer
	for k, bl := range blocks {
		if bl.Type != "text" {
			return "", invalid(param, codeUnsupported, "%s.%d.type %q: only text blocks", at, k, bl.Type)
		}
		if k > 0 {
			b.WriteString(sep)
		}
		b.WriteString(bl.Text)
	}
	return b.String(), nil
}

// anthropicMessages turns one message into chat messages: a user message's tool results
// become tool messages (before its text), an assistant message's tool_use blocks its calls
// and its thinking block its reasoning.
func anthropicMessages(m anthropicMsg, i int) ([]any, error) {
	var text string
	if json.Unmarshal(m.Content, &text) == nil {
		return []any{map[string]any{"role": m.Role, "content": text}}, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(m.Content, &blocks); err != nil {
		return nil, invalid("messages", codeInvalidType, "messages.%d.content: want a string or a list of content blocks", i)
	}
	var out []any
	var b bytes.Buffer
	var calls []any
	thinking := ""
	for j, bl := range blocks {
		switch {
		case bl.Type == "text":
			b.WriteString(bl.Text)
		case bl.Type == "thinking" && m.Role == "assistant":
			thinking += bl.Thinking
		case bl.Type == "redacted_thinking" && m.Role == "assistant":
		case bl.Type == "tool_use" && m.Role == "assistant":
			if bl.ID == "" || bl.Name == "" {
				return nil, invalid("messages", codeMissing, "messages.%d.content.%d: a tool_use block needs id and name", i, j)
			}
			args := string(bl.Input)
			if args == "" || args == "null" {
				args = "{}"
			}
			calls = append(calls, map[string]any{"id": bl.ID, "type": "function", "function": map[string]string{"name": bl.Name, "arguments": args}})
		case bl.Type == "tool_result" && m.Role == "user":
			content, err := toolResultText(bl.Content, i, j)
			if err != nil {
				return nil, err
			}
			out = append(out, map[string]any{"role": "tool", "tool_call_id": bl.ToolUseID, "content": content})
		default:
			return nil, invalid("messages", codeUnsupported, "messages.%d.content.%d.type %q: not supported in a %s message (text, tool_use, tool_result and thinking are)", i, j, bl.Type, m.Role)
		}
	}
	if b.Len() > 0 || len(calls) > 0 || len(out) == 0 {
		msg := map[string]any{"role": m.Role, "content": b.String()}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		if thinking != "" {
			msg["reasoning_content"] = thinking
		}
		out = append(out, msg)
	}
	return out, nil
}

// toolResultText is a tool_result's content as text: a string, or its text blocks joined.
func toolResultText(raw json.RawMessage, i, j int) (string, error) {
	return blocksText(raw, "", "messages", fmt.Sprintf("messages.%d.content.%d.content", i, j))
}

// anthropicTools turns {"name", "description", "input_schema"} tools into chat's; server
// tools (web search, code execution, ...) are refused.
func anthropicTools(tools []json.RawMessage) ([]any, error) {
	return toChatTools(tools, "input_schema", func(typ string) bool { return typ == "" || typ == "custom" },
		"only custom tools (server tools run on Anthropic's servers)", "tools.%d")
}

// writeAnthropicError writes err as Anthropic's error object with the status it carries.
func writeAnthropicError(w http.ResponseWriter, err error) {
	ae := asAPIError(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ae.Status)
	json.NewEncoder(w).Encode(anthropicErrorBody(ae))
}

func asAPIError(err error) *apiError {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: "the server failed to handle the request"}
	}
	return ae
}

func anthropicErrorBody(ae *apiError) map[string]any {
	typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
		408: "invalid_request_error", 413: "request_too_large", 429: "rate_limit_error", 503: "overloaded_error"}[ae.Status]
	if typ == "" {
		typ = "api_error"
	}
	msg := ae.Message
	if ae.Param != "" && !bytes.HasPrefix([]byte(msg), []byte(ae.Param)) {
		msg = fmt.Sprintf("%s: %s", ae.Param, msg)
	}
	return map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}}
}
