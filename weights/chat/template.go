// Package chat renders a conversation into a model's prompt with the model's Jinja chat
// template, as Hugging Face's apply_chat_template does with Python's Jinja2: trim_blocks and
// lstrip_blocks on, tojson as transformers defines it (keys in their order, non-ASCII kept,
// nothing HTML-escaped), raise_exception and strftime_now defined, the special tokens, tools,
// documents, add_generation_prompt, continue_final_message and any extra variables
// (chat_template_kwargs) passed through. It uses github.com/ardanlabs/jinja, a Jinja engine
// written for chat templates.
package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wspec/wspec/weights/chat/internal/jinja"
)

// Default is the chat format of a model whose folder has no chat template: the system
// messages as plain paragraphs, every other message as "Role: content" on its own line, and
// "Assistant:" to prompt the reply. For
//
//	[{"role":"system","content":"Tell stories."},{"role":"user","content":"A dragon."}]
//
// it renders "Tell stories.\n\nUser: A dragon.\nAssistant:".
const Default = `{%- for m in messages -%}
{%- if m.role == 'system' or m.role == 'developer' -%}{{ m.content }}{{ '\n\n' }}
{%- else -%}{{ m.role | capitalize }}: {{ m.content }}{{ '\n' }}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}Assistant:{%- endif -%}`

// Template is a compiled chat template. It is safe for concurrent use.
type Template struct {
	tpl    *jinja.Template
	Origin string // "tokenizer_config.json", "chat_template.jinja", "--chat-template" or "default"
	bos    string // the BOS token's text ("" without one)
	eos    string
	// stripBOS: the engine adds BOS when it encodes, so a BOS the template writes first is
	// dropped rather than doubled.
	stripBOS bool
	// Now is the clock strftime_now reads (time.Now when nil).
	Now func() time.Time
}

// Message is one message of a conversation as the template sees it.
type Message struct {
	Role    string
	Content string // "" for none (an assistant message with only tool calls)
	Name    string
	// ToolCalls are an assistant message's calls; ToolCallID is the call a tool message
	// answers.
	ToolCalls  []ToolCall
	ToolCallID string
	// Reasoning is an assistant message's reasoning_content ("" for none).
	Reasoning string
}

// ToolCall is one function call of an assistant message.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the call's arguments as a JSON object's text; the template gets the
	// object (as vLLM passes it), or the text when it is not JSON.
	Arguments string
}

// Input is what a render takes besides the messages.
type Input struct {
	Messages []Message
	// Tools and Documents are JSON arrays (nil for none), passed as given.
	Tools, Documents json.RawMessage
	// AddGenerationPrompt ends the prompt where the assistant's reply begins;
	// ContinueFinalMessage instead leaves the last message open so the model continues it.
	AddGenerationPrompt, ContinueFinalMessage bool
	// Vars are further template variables (vLLM's chat_template_kwargs), each a JSON value.
	Vars map[string]json.RawMessage
	// Done, when closed, ends the render with an error (the client went away).
	Done <-chan struct{}
}

// RenderTimeout bounds one render's wall-clock time. Beside it, a render is bounded in steps,
// macro depth, output and value sizes (internal/jinja's Limits and bounds): a template that
// recurses without end, loops for ever or builds gigabytes fails its render with ErrLimit.
// Real templates render in well under a millisecond.
const RenderTimeout = 5 * time.Second

// ErrLimit is the error of a render that went past its bounds.
var ErrLimit = jinja.ErrLimit

// ErrRaised is a template's own refusal (raise_exception): the conversation's fault, not the
// template's. Errors that wrap it carry the template's message.
var ErrRaised = errors.New("chat template refused the conversation")

// Load finds a model's chat template: override (a file, or the template text) when given,
// else tokenizer_config.json's chat_template (a string, or a list of named templates of which
// "default" is taken), else chat_template.jinja, else Default. It returns the source and
// where it came from.
func Load(dir, override string) (source, origin string, err error) {
	if override != "" {
		if b, err := os.ReadFile(override); err == nil {
			return string(b), "--chat-template " + override, nil
		}
		return override, "--chat-template", nil
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return Default, "default", nil // a GGUF file without a template
	}
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", "", err
	}
	if err == nil {
		var cfg struct {
			ChatTemplate json.RawMessage `json:"chat_template"`
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return "", "", fmt.Errorf("%s: %w", filepath.Join(dir, "tokenizer_config.json"), err)
		}
		var one string
		var named []struct{ Name, Template string }
		switch {
		case len(cfg.ChatTemplate) == 0 || string(cfg.ChatTemplate) == "null":
		case json.Unmarshal(cfg.ChatTemplate, &one) == nil:
			return one, "tokenizer_config.json", nil
		case json.Unmarshal(cfg.ChatTemplate, &named) == nil:
			for _, t := range named {
				if t.Name == "default" {
					return t.Template, "tokenizer_config.json", nil
				}
			}
			return "", "", fmt.Errorf("tokenizer_config.json: chat_template lists no template named \"default\"")
		default:
			return "", "", fmt.Errorf("tokenizer_config.json: chat_template is neither a string nor a list of named templates")
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja")); err == nil {
		return string(b), "chat_template.jinja", nil
	}
	return Default, "default", nil
}

// New compiles source (from origin); bos and eos are the special tokens' text, and stripBOS
// says the engine adds BOS itself.
func New(source, origin, bos, eos string, stripBOS bool) (t *Template, err error) {
	defer func() { // a template the library cannot handle is an error, not a crash
		if r := recover(); r != nil {
			err = fmt.Errorf("chat template (%s): %v", origin, r)
		}
	}()
	tpl, err := jinja.Compile(withOwnTojson(source))
	if err != nil {
		return nil, fmt.Errorf("chat template (%s): %w", origin, err)
	}
	return &Template{tpl: tpl, Origin: origin, bos: bos, eos: eos, stripBOS: stripBOS && bos != ""}, nil
}

// Render applies the template to in.
func (t *Template) Render(in Input) (out string, err error) {
	if in.ContinueFinalMessage && in.AddGenerationPrompt {
		return "", fmt.Errorf("%w: add_generation_prompt and continue_final_message cannot both be set", ErrRaised)
	}
	if in.ContinueFinalMessage && len(in.Messages) == 0 {
		return "", fmt.Errorf("%w: continue_final_message needs a message to continue", ErrRaised)
	}
	data, err := t.data(in)
	if err != nil {
		return "", err
	}
	var raised error
	data["raise_exception"] = jinja.NewCallable("raise_exception", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		msg := "raise_exception"
		if len(args) > 0 {
			msg = args[0].String()
			if args[0].IsString() {
				msg = args[0].AsString()
			}
		}
		raised = fmt.Errorf("%w: %s", ErrRaised, msg)
		return jinja.Undefined(), raised
	})
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	data[tojsonName] = jinja.NewCallable("tojson", tojson)
	data["strftime_now"] = jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), fmt.Errorf("strftime_now: want one format string")
		}
		return jinja.NewString(strftime(args[0].AsString(), now())), nil
	})
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("chat template (%s) failed: %v", t.Origin, r)
		}
	}()
	out, err = t.tpl.RenderLimited(data, jinja.Limits{Deadline: time.Now().Add(RenderTimeout), Done: in.Done})
	if raised != nil {
		return "", raised
	}
	if err != nil {
		return "", fmt.Errorf("chat template (%s): %w", t.Origin, err)
	}
	if in.ContinueFinalMessage {
		if out, err = cutAfterFinal(out, in.Messages[len(in.Messages)-1].Content); err != nil {
			return "", err
		}
	}
	if t.stripBOS {
		out = strings.TrimPrefix(out, t.bos)
	}
	return out, nil
}

// cutAfterFinal ends a rendered conversation right after its last message's content, as
// transformers does for continue_final_message.
func cutAfterFinal(rendered, final string) (string, error) {
	trimmed := strings.TrimSpace(final)
	at := strings.LastIndex(rendered, trimmed)
	if trimmed == "" || at < 0 {
		return "", fmt.Errorf("%w: continue_final_message: the final message's content does not appear in the rendered prompt", ErrRaised)
	}
	if n := len(strings.TrimLeft(final, " \t\n\r\v\f")); at+n <= len(rendered) && rendered[at:at+n] == final {
		return rendered[:at+n], nil
	}
	return rendered[:at+len(trimmed)], nil
}

// data builds the template's variables.
func (t *Template) data(in Input) (map[string]jinja.Value, error) {
	data := map[string]jinja.Value{}
	for k, raw := range in.Vars {
		v, err := jsonValue(raw)
		if err != nil {
			return nil, fmt.Errorf("chat_template_kwargs.%s: %w", k, err)
		}
		data[k] = v
	}
	msgs := make([]jinja.Value, len(in.Messages))
	for i, m := range in.Messages {
		msgs[i] = m.value()
	}
	data["messages"] = jinja.NewList(msgs)
	for name, raw := range map[string]json.RawMessage{"tools": in.Tools, "documents": in.Documents} {
		if len(raw) == 0 || string(raw) == "null" {
			data[name] = jinja.None()
			continue
		}
		v, err := jsonValue(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		data[name] = v
	}
	data["add_generation_prompt"] = jinja.NewBool(in.AddGenerationPrompt)
	data["bos_token"] = jinja.NewString(t.bos)
	data["eos_token"] = jinja.NewString(t.eos)
	return data, nil
}

// value is the message as vLLM hands it to a template: role and content, then name,
// tool_calls (arguments as an object), tool_call_id and reasoning_content where set.
func (m Message) value() jinja.Value {
	d := dict("role", jinja.NewString(m.Role), "content", jinja.NewString(m.Content))
	if m.Name != "" {
		d.AsDict().Set("name", jinja.NewString(m.Name))
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]jinja.Value, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			args, err := jsonValue([]byte(c.Arguments))
			if err != nil {
				args = jinja.NewString(c.Arguments)
			}
			calls[i] = dict("id", jinja.NewString(c.ID), "type", jinja.NewString("function"),
				"function", dict("name", jinja.NewString(c.Name), "arguments", args))
		}
		d.AsDict().Set("tool_calls", jinja.NewList(calls))
	}
	if m.ToolCallID != "" {
		d.AsDict().Set("tool_call_id", jinja.NewString(m.ToolCallID))
	}
	if m.Reasoning != "" {
		d.AsDict().Set("reasoning_content", jinja.NewString(m.Reasoning))
	}
	return d
}
