package serve

import (
	"encoding/json"
	"strings"

	"github.com/wspec/wspec/spec/grammar"
	"github.com/wspec/wspec/spec/reasoning"
	"github.com/wspec/wspec/spec/toolcall"
)

// toolMode is how a chat reply's text becomes its message.
type toolMode int

const (
	toolsOff      toolMode = iota // no tools, or tool_choice "none": the text is content
	toolsAuto                     // the server's --tool-call-parser reads calls out of the text
	toolsRequired                 // the text is forced to be a list of calls
	toolsNamed                    // the text is forced to be one function's arguments
)

// toolPlan is what a chat request's tools and tool_choice amount to.
type toolPlan struct {
	mode  toolMode
	named string          // toolsNamed: the function
	force *grammar.Spec   // toolsRequired, toolsNamed: the schema the reply is written under
	tools []toolcall.Tool // the functions offered
}

// toolPlan validates tools, tool_choice and parallel_tool_calls as vLLM does: tool_choice
// defaults to "auto" when tools are given; "auto" needs the server started with
// --enable-auto-tool-choice and a --tool-call-parser; "required" and a named function are
// forced through structured outputs, so they work with any model.
func (s *Server) toolPlan(req *chatRequest) (*toolPlan, error) {
	p := &toolPlan{}
	for i, t := range req.Tools {
		if t.Type != "function" {
			return nil, invalid("tools", codeInvalidValue, "tools[%d].type %q: want \"function\"", i, t.Type)
		}
		if t.Function.Name == "" {
			return nil, invalid("tools", codeMissing, "tools[%d].function.name: required", i)
		}
		p.tools = append(p.tools, toolcall.Tool{Name: t.Function.Name, Parameters: t.Function.Parameters})
	}
	choice := "none"
	if len(req.Tools) > 0 {
		choice = "auto"
	}
	raw := req.ToolChoice
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case json.Unmarshal(raw, &choice) == nil:
		if choice != "none" && choice != "auto" && choice != "required" {
			return nil, invalid("tool_choice", codeInvalidValue, "tool_choice %q: want \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}", choice)
		}
	default:
		var named struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &named); err != nil || named.Type != "function" || named.Function.Name == "" {
			return nil, invalid("tool_choice", codeInvalidValue, "tool_choice: want \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}")
		}
		choice, p.named = "named", named.Function.Name
	}
	if choice != "none" && len(req.Tools) == 0 {
		return nil, invalid("tool_choice", codeInvalidValue, "tool_choice: when using tool_choice, tools must be set")
	}
	switch choice {
	case "none":
	case "auto":
		if !s.cfg.EnableAutoToolChoice || s.cfg.ToolCallParser == "" {
			return nil, invalid("tool_choice", codeInvalidValue, "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set")
		}
		p.mode = toolsAuto
	case "required":
		schema, err := toolcall.RequiredSchema(p.tools, req.ParallelToolCalls == nil || *req.ParallelToolCalls)
		if err != nil {
			return nil, invalid("tools", codeInvalidValue, "tools: %v", err)
		}
		p.mode, p.force = toolsRequired, &grammar.Spec{Kind: grammar.JSONSchema, Text: string(schema)}
	case "named":
		for _, t := range p.tools {
			if t.Name == p.named {
				text, err := grammar.SchemaText(toolcall.NamedSchema(t))
				if err != nil {
					return nil, invalid("tools", codeInvalidValue, "tools: %s's parameters: %v", t.Name, err)
				}
				p.mode, p.force = toolsNamed, &grammar.Spec{Kind: grammar.JSONSchema, Text: text}
			}
		}
		if p.mode != toolsNamed {
			return nil, invalid("tool_choice", codeInvalidValue, "tool_choice: tool %q is not among tools", p.named)
		}
	}
	return p, nil
}

// chatOutput turns one choice's text, as it arrives, into reasoning, content and tool calls.
type chatOutput struct {
	plan   *toolPlan
	reason *reasoning.Stream // nil without --reasoning-parser
	tools  *toolcall.Stream  // toolsAuto
	forced strings.Builder   // toolsRequired, toolsNamed: the whole text, read at the end
	sent   int               // calls complete and sent so far (the next call's index)
	// streamed is what each call's stream has sent: its head, its arguments' text so far
	streamed []streamedCall
}

type streamedCall struct {
	head bool
	args string
}

// writing calls fn for each call being written whose name is known (not yet complete): its
// number among the reply's calls, its name and arguments so far.
func (o *chatOutput) writing(fn func(n int, name, args string)) {
	for n, p := range o.partials() {
		if n >= o.sent && p.Name != "" {
			fn(n, p.Name, p.Args)
		}
	}
}

// done calls fn for each call now complete, numbering it among the reply's calls.
func (o *chatOutput) done(calls []toolcall.Call, fn func(n int, name, args string)) {
	for _, c := range calls {
		o.sent++
		fn(o.sent-1, c.Name, c.Arguments)
	}
}

// partials are the calls written so far, for streaming them as they are written (nil with
// tool calls off).
func (o *chatOutput) partials() []toolcall.Partial {
	switch o.plan.mode {
	case toolsAuto:
		return o.tools.Partials()
	case toolsRequired:
		return toolcall.PartialRequired(o.forced.String())
	case toolsNamed:
		return []toolcall.Partial{toolcall.PartialNamed(o.plan.named, o.forced.String())}
	}
	return nil
}

// callDelta is what call n adds to what its stream sent: whether its head (name) is new, and
// its arguments' new text. args that do not continue what was sent add nothing.
func (o *chatOutput) callDelta(n int, args string) (head bool, more string) {
	for len(o.streamed) <= n {
		o.streamed = append(o.streamed, streamedCall{})
	}
	st := &o.streamed[n]
	head, st.head = !st.head, true
	if rest, ok := strings.CutPrefix(args, st.args); ok {
		more, st.args = rest, args
	}
	return head, more
}

func (s *Server) newChatOutput(plan *toolPlan) *chatOutput {
	o := &chatOutput{plan: plan}
	if s.cfg.ReasoningParser != "" && plan.mode != toolsRequired && plan.mode != toolsNamed {
		o.reason = reasoning.NewStream(s.cfg.ReasoningParser)
	}
	if plan.mode == toolsAuto {
		o.tools = toolcall.NewStream(s.cfg.ToolCallParser)
	}
	return o
}

// push takes new text and returns what can be sent now.
func (o *chatOutput) push(text string) (thought, content string, calls []toolcall.Call) {
	if o.plan.mode == toolsRequired || o.plan.mode == toolsNamed {
		o.forced.WriteString(text)
		return "", "", nil
	}
	content = text
	if o.reason != nil {
		thought, content = o.reason.Push(text)
	}
	if o.tools != nil && content != "" {
		content, calls = o.tools.Push(content)
	}
	return thought, content, calls
}

// finish ends the text: what was held back, and the forced calls. A forced reply the length
// limit cut (not a whole list of calls) stays content.
func (o *chatOutput) finish() (thought, content string, calls []toolcall.Call) {
	switch o.plan.mode {
	case toolsRequired:
		calls, err := toolcall.ParseRequired(o.forced.String())
		if err != nil {
			return "", o.forced.String(), nil
		}
		return "", "", calls
	case toolsNamed:
		c, err := toolcall.ParseNamed(o.plan.named, o.forced.String())
		if err != nil {
			return "", o.forced.String(), nil
		}
		return "", "", []toolcall.Call{c}
	}
	if o.reason != nil {
		thought, content = o.reason.Finish()
	}
	if o.tools != nil {
		c1, early := o.tools.Push(content)
		c2, rest := o.tools.Finish()
		content, calls = c1+c2, append(early, rest...)
	}
	return thought, content, calls
}

// toolCallID is a new call's id: nine letters and digits for Mistral's parser (its template
// refuses others), chatcmpl-tool- and 32 hex digits otherwise, as vLLM writes them.
func (s *Server) toolCallID() string {
	if s.cfg.ToolCallParser == "mistral" {
		return randomID()[:9]
	}
	return "chatcmpl-tool-" + randomID()
}
