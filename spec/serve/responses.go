package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
)

// POST /v1/responses, OpenAI's Responses API, as a chat request underneath: the input items
// (and, with previous_response_id, the stored conversation before them) become chat messages,
// instructions a system message first, function tools chat tools, text.format a
// response_format, max_output_tokens max_completion_tokens; the chat path then validates,
// renders the template, runs and parses tool calls and reasoning as for chat completions, so
// speculation, prefix caching and every sampling field work alike. Hosted tools (web search,
// file search, ...) and inputs other than text are refused.

// responsesRequest is the request body; the fields besides these that chat completions takes
// (top_k, seed, stop, structured_outputs, speculative, ...) are passed on as they are.
type responsesRequest struct {
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input"`
	Instructions       *string           `json:"instructions"`
	Tools              []json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls"`
	Text               *responsesText    `json:"text"`
	Reasoning          json.RawMessage   `json:"reasoning"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	Stream             bool              `json:"stream"`
	Store              *bool             `json:"store"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Metadata           json.RawMessage   `json:"metadata"`
	User               json.RawMessage   `json:"user"`
	Truncation         *string           `json:"truncation"`
	// OpenAI fields that change nothing here: accepted and ignored.
	Include          json.RawMessage `json:"include"`
	ServiceTier      json.RawMessage `json:"service_tier"`
	PromptCacheKey   json.RawMessage `json:"prompt_cache_key"`
	SafetyIdentifier json.RawMessage `json:"safety_identifier"`
	Background       *bool           `json:"background"`
	// chat completions' own fields, passed on
	samplingPassThrough
}

// samplingPassThrough are chat completions' fields a Responses request may carry too
// (vLLM takes them on /v1/responses), beside the sampling parameters (params).
type samplingPassThrough struct {
	params            samplingParams
	Seed              json.RawMessage `json:"seed,omitempty"`
	Stop              json.RawMessage `json:"stop,omitempty"`
	StructuredOutputs json.RawMessage `json:"structured_outputs,omitempty"`
	Speculative       json.RawMessage `json:"speculative,omitempty"`
	ChatTemplateKw    json.RawMessage `json:"chat_template_kwargs,omitempty"`
}

func (p *samplingPassThrough) samplingParams() *samplingParams { return &p.params }

type responsesText struct {
	Format    *responsesFormat `json:"format"`
	Verbosity json.RawMessage  `json:"verbosity"`
}

type responsesFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	conv, chatBody, err := s.responsesToChat(&req)
	if err != nil {
		writeError(w, err)
		return
	}
	rq, err := s.chatFromBody(r.Context(), chatBody)
	if err != nil {
		writeError(w, err)
		return
	}
	store := req.Store == nil || *req.Store
	s.reply(w, r, rq, "resp_", func(id string, created int64) replier {
		rp := &responsesReplier{s: s, id: id, created: created, req: &req, out: s.newChatOutput(rq.tools), conv: conv, store: store}
		if rq.stream {
			rq.usage = true // the last event, response.completed, comes where the usage chunk would
		}
		return rp
	})
}

// responsesToChat turns the request into a chat completions body, and returns the
// conversation as chat messages (what a later previous_response_id continues).
func (s *Server) responsesToChat(req *responsesRequest) ([]json.RawMessage, []byte, error) {
	var msgs []json.RawMessage
	if id := req.PreviousResponseID; id != nil {
		prev, ok := s.responses.get(*id)
		if !ok {
			return nil, nil, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "previous_response_id",
				Code: "previous_response_not_found", Message: fmt.Sprintf("previous response with id %q not found (stored responses are kept in memory, the most recent first)", *id)}
		}
		msgs = append(msgs, prev.conv...)
	}
	in, err := inputMessages(req.Input)
	if err != nil {
		return nil, nil, err
	}
	msgs = append(msgs, in...)
	conv := msgs
	if req.Instructions != nil && *req.Instructions != "" {
		sys, _ := json.Marshal(map[string]string{"role": "system", "content": *req.Instructions})
		msgs = append([]json.RawMessage{sys}, msgs...)
	}
	body := map[string]any{"model": req.Model, "messages": msgs, "stream": req.Stream}
	if req.Model == "" {
		body["model"] = s.name
	}
	tools, err := chatTools(req.Tools)
	if err != nil {
		return nil, nil, err
	}
	if len(tools) > 0 {
		body["tools"] = tools
	}
	if len(req.ToolChoice) > 0 && string(req.ToolChoice) != "null" {
		tc, err := chatToolChoice(req.ToolChoice)
		if err != nil {
			return nil, nil, err
		}
		body["tool_choice"] = tc
	}
	if req.ParallelToolCalls != nil {
		body["parallel_tool_calls"] = *req.ParallelToolCalls
	}
	if req.Text != nil && req.Text.Format != nil {
		switch f := req.Text.Format; f.Type {
		case "text", "":
		case "json_object":
			body["response_format"] = map[string]any{"type": "json_object"}
		case "json_schema":
			if len(f.Schema) == 0 {
				return nil, nil, invalid("text.format.schema", codeMissing, "text.format: json_schema needs a schema")
			}
			body["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": f.Name, "schema": f.Schema, "strict": f.Strict}}
		default:
			return nil, nil, invalid("text.format.type", codeInvalidValue, "text.format.type %q: want text, json_object or json_schema", f.Type)
		}
	}
	if req.MaxOutputTokens != nil {
		body["max_completion_tokens"] = *req.MaxOutputTokens
	}
	for name, v := range req.params { // temperature and top_p among them
		body[name] = v
	}
	if req.Truncation != nil && *req.Truncation != "disabled" {
		return nil, nil, invalid("truncation", codeUnsupported, "truncation %q: only \"disabled\" (a conversation longer than the context is refused)", *req.Truncation)
	}
	pass, _ := json.Marshal(req.samplingPassThrough)
	var extra map[string]json.RawMessage
	json.Unmarshal(pass, &extra)
	for k, v := range extra {
		body[k] = v
	}
	b, err := json.Marshal(body)
	return conv, b, err
}

// inputItem is one item of a Responses input list.
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// inputMessages turns input (a string, or a list of items) into chat messages: consecutive
// function calls become one assistant message with their tool calls, each function call
// output a tool message; reasoning items are dropped (the chat template renders none).
func inputMessages(raw json.RawMessage) ([]json.RawMessage, error) {
	var text string
	if len(raw) == 0 || string(raw) == "null" {
		return nil, invalid("input", codeMissing, "input: required")
	}
	if json.Unmarshal(raw, &text) == nil {
		m, _ := json.Marshal(map[string]string{"role": "user", "content": text})
		return []json.RawMessage{m}, nil
	}
	var items []inputItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, invalid("input", codeInvalidType, "input: want a string or a list of items")
	}
	var out []json.RawMessage
	var calls []map[string]any // the assistant's calls not yet written
	flush := func() {
		if len(calls) > 0 {
			m, _ := json.Marshal(map[string]any{"role": "assistant", "content": nil, "tool_calls": calls})
			out = append(out, m)
			calls = nil
		}
	}
	for i, it := range items {
		switch it.Type {
		case "message", "":
			flush()
			content, err := inputContent(it.Content, i)
			if err != nil {
				return nil, err
			}
			switch it.Role {
			case "user", "system", "developer", "assistant":
			default:
				return nil, invalid("input", codeInvalidValue, "input[%d].role %q: want user, system, developer or assistant", i, it.Role)
			}
			m, _ := json.Marshal(map[string]any{"role": it.Role, "content": content})
			out = append(out, m)
		case "function_call":
			if it.Name == "" || it.CallID == "" {
				return nil, invalid("input", codeMissing, "input[%d]: a function_call needs name and call_id", i)
			}
			calls = append(calls, map[string]any{"id": it.CallID, "type": "function", "function": map[string]string{"name": it.Name, "arguments": it.Arguments}})
		case "function_call_output":
			flush()
			var out1 string
			if json.Unmarshal(it.Output, &out1) != nil {
				out1 = string(bytes.TrimSpace(it.Output)) // output as JSON: passed as its text
			}
			m, _ := json.Marshal(map[string]any{"role": "tool", "tool_call_id": it.CallID, "content": out1})
			out = append(out, m)
		case "reasoning", "item_reference":
		default:
			return nil, invalid("input", codeUnsupported, "input[%d].type %q: only message, function_call, function_call_output and reasoning items are supported", i, it.Type)
		}
	}
	flush()
	if len(out) == 0 {
		return nil, invalid("input", codeMissing, "input: no messages")
	}
	return out, nil
}

// inputContent is a message's content as chat takes it: a string, or its text parts joined.
func inputContent(raw json.RawMessage, i int) (string, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", invalid("input", codeInvalidType, "input[%d].content: want a string or a list of input_text parts", i)
	}
	var b bytes.Buffer
	for j, p := range parts {
		switch {
		case p.Type != "input_text" && p.Type != "output_text" && p.Type != "text":
			return "", invalid("input", codeUnsupported, "input[%d].content[%d].type %q: only text parts are supported", i, j, p.Type)
		case p.Text == nil:
			return "", invalid("input", codeMissing, "input[%d].content[%d]: no text", i, j)
		}
		b.WriteString(*p.Text)
	}
	return b.String(), nil
}

// chatTools turns Responses function tools ({"type": "function", "name": ...}) into chat's
// ({"type": "function", "function": {...}}); a hosted tool is refused by name.
func chatTools(tools []json.RawMessage) ([]any, error) {
	return toChatTools(tools, "parameters", func(typ string) bool { return typ == "function" },
		"only function tools are supported (hosted tools such as web_search and file_search run on OpenAI's servers)", "tools[%d]")
}

// toChatTools turns tools that name themselves at the top ({"name", "description", and the
// parameters' schema under schemaKey}) into chat's; a tool whose type ok refuses is refused
// with why. at formats a tool's place in errors.
func toChatTools(tools []json.RawMessage, schemaKey string, ok func(typ string) bool, why, at string) ([]any, error) {
	var out []any
	for i, raw := range tools {
		var t map[string]json.RawMessage
		var typ, name, desc string
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, invalid("tools", codeInvalidType, at+": want an object", i)
		}
		json.Unmarshal(t["type"], &typ)
		json.Unmarshal(t["name"], &name)
		json.Unmarshal(t["description"], &desc)
		if !ok(typ) {
			return nil, invalid("tools", codeUnsupported, at+".type %q: %s", i, typ, why)
		}
		if name == "" {
			return nil, invalid("tools", codeMissing, at+".name: required", i)
		}
		fn := map[string]any{"name": name, "description": desc}
		if p := t[schemaKey]; len(p) > 0 && string(p) != "null" {
			fn["parameters"] = p
		}
		out = append(out, map[string]any{"type": "function", "function": fn})
	}
	return out, nil
}

// chatToolChoice turns tool_choice ("auto", "none", "required" or {"type": "function", "name":
// ...}) into chat's.
func chatToolChoice(raw json.RawMessage) (any, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var named struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(raw, &named); err != nil || named.Type != "function" || named.Name == "" {
		return nil, invalid("tool_choice", codeInvalidValue, "tool_choice: want \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"name\": ...}")
	}
	return map[string]any{"type": "function", "function": map[string]string{"name": named.Name}}, nil
}
