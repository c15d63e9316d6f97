package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/nikolalohinski/gonja/v2"
	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
)

// DefaultChatTemplate is the chat format of a model whose folder has no chat template: the
// system messages as plain paragraphs, every other message as "Role: content" on its own
// line, and "Assistant:" to prompt the reply. For
//
//	[{"role":"system","content":"Tell stories."},{"role":"user","content":"A dragon."}]
//
// it renders "Tell stories.\n\nUser: A dragon.\nAssistant:".
const DefaultChatTemplate = `{%- for m in messages -%}
{%- if m.role == 'system' or m.role == 'developer' -%}{{ m.content }}{{ '\n\n' }}
{%- else -%}{{ m.role | capitalize }}: {{ m.content }}{{ '\n' }}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}Assistant:{%- endif -%}`

// chatTemplate renders a list of messages into a prompt with a Jinja template, as Hugging
// Face's apply_chat_template does (trim_blocks and lstrip_blocks on, raise_exception and
// the special tokens defined).
type chatTemplate struct {
	tpl    *exec.Template
	source string // "tokenizer_config.json", "chat_template.jinja", "--chat-template" or "default"
	bos    string // the BOS token's text ("" without one)
	eos    string
	// stripBOS: the engine adds BOS when it encodes, so a BOS the template writes first is
	// dropped rather than doubled.
	stripBOS bool
}

// rootTemplate is the template's name in its loader, which serves nothing else: a template
// cannot include or import files.
const rootTemplate = "/chat_template.jinja"

// loadChatTemplate finds the model's chat template: override (a file, or the template text)
// when given, else tokenizer_config.json's chat_template (a string, or a list of named
// templates of which "default" is taken), else chat_template.jinja, else the default.
func loadChatTemplate(dir, override string) (string, string, error) {
	if override != "" {
		if b, err := os.ReadFile(override); err == nil {
			return string(b), "--chat-template " + override, nil
		}
		return override, "--chat-template", nil
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return DefaultChatTemplate, "default", nil // a GGUF file without a template
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
	return DefaultChatTemplate, "default", nil
}

// newChatTemplate parses source; bos and eos are the special tokens' text.
func newChatTemplate(source, origin, bos, eos string, stripBOS bool) (*chatTemplate, error) {
	cfg := config.New()
	cfg.TrimBlocks, cfg.LeftStripBlocks = true, true
	loader, err := loaders.NewMemoryLoader(map[string]string{rootTemplate: source})
	if err != nil {
		return nil, err
	}
	env := &exec.Environment{
		Context:           exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables),
		Filters:           builtins.Filters,
		Tests:             builtins.Tests,
		ControlStructures: builtins.ControlStructures,
		Methods:           builtins.Methods,
	}
	tpl, err := exec.NewTemplate(rootTemplate, cfg, loader, env)
	if err != nil {
		return nil, fmt.Errorf("chat template (%s): %w", origin, err)
	}
	return &chatTemplate{tpl: tpl, source: origin, bos: bos, eos: eos, stripBOS: stripBOS && bos != ""}, nil
}

func init() { gonja.SetLoggerOutput(io.Discard) } // template errors come back as errors

// errTemplate is a template's own refusal (raise_exception), which is the request's fault.
type errTemplate struct{ msg string }

func (e *errTemplate) Error() string { return e.msg }

// render applies the template to the messages with add_generation_prompt set.
func (c *chatTemplate) render(msgs []chatMessage) (prompt string, err error) {
	list := make([]map[string]any, len(msgs))
	for i, m := range msgs {
		list[i] = map[string]any{"role": m.Role, "content": m.Content.text}
		if m.Name != "" {
			list[i]["name"] = m.Name
		}
	}
	var raised *errTemplate
	defer func() { // a template that misbehaves in the Jinja library is an error, not a crash
		if r := recover(); r != nil {
			err = fmt.Errorf("chat template (%s) failed: %v", c.source, r)
		}
	}()
	ctx := exec.NewContext(map[string]any{
		"messages":              list,
		"add_generation_prompt": true,
		"bos_token":             c.bos,
		"eos_token":             c.eos,
		"raise_exception": func(msg string) (string, error) {
			raised = &errTemplate{msg}
			return "", raised
		},
	})
	out, err := c.tpl.ExecuteToString(ctx)
	if raised != nil {
		return "", raised
	}
	if err != nil {
		return "", fmt.Errorf("chat template (%s): %w", c.source, err)
	}
	if c.stripBOS {
		out = strings.TrimPrefix(out, c.bos)
	}
	return out, nil
}
