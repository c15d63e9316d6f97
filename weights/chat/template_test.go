package serve

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func msgs(pairs ...string) []chatMessage {
	var out []chatMessage
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, chatMessage{Role: pairs[i], Content: contentField{text: pairs[i+1]}})
	}
	return out
}

// Templates as models ship them render as Hugging Face's apply_chat_template renders them.
func TestChatTemplates(t *testing.T) {
	const (
		chatML = `{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`
		llama3 = `{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}`
		llama2 = `{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}`
		// trim_blocks and lstrip_blocks: the newlines and indentation around the tags go.
		blocks = "{% for m in messages %}\n    {% if m.role == 'user' %}\n[{{ m.content }}]\n    {% endif %}\n{% endfor %}\n"
	)
	conv := msgs("system", "Be brief.", "user", "Hi ", "assistant", "Hello.", "user", "A story?")
	for _, c := range []struct {
		name, src string
		stripBOS  bool
		in        []chatMessage
		want      string
	}{
		{"chatml", chatML, false, msgs("user", "Hi"), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
		{"llama3", llama3, false, msgs("user", " Hi "), "<s><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"llama3 strip bos", llama3, true, msgs("user", "Hi"), "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"llama2", llama2, false, conv, "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello. </s><s>[INST] A story? [/INST]"},
		{"blocks", blocks, false, msgs("user", "a", "assistant", "b", "user", "c"), "[a]\n[c]\n"},
		{"default", DefaultChatTemplate, false, conv, "Be brief.\n\nUser: Hi \nAssistant: Hello.\nUser: A story?\nAssistant:"},
	} {
		tpl, err := newChatTemplate(c.src, c.name, "<s>", "</s>", c.stripBOS)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := tpl.render(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
	// raise_exception is the request's fault, reported with the template's message.
	tpl, err := newChatTemplate(llama2, "llama2", "<s>", "</s>", false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tpl.render(msgs("user", "a", "user", "b"))
	var te *errTemplate
	if !errors.As(err, &te) || te.msg != "Conversation roles must alternate user/assistant/user/assistant/..." {
		t.Fatalf("raise_exception: %v", err)
	}
	// A template cannot read files.
	tpl, err = newChatTemplate(`{% include "/etc/hostname" %}`, "include", "", "", false)
	if err == nil {
		if out, err := tpl.render(msgs("user", "a")); err == nil {
			t.Fatalf("include rendered %q", out)
		}
	}
	if _, err := newChatTemplate(`{% for %}`, "broken", "", "", false); err == nil {
		t.Fatal("a broken template parsed")
	}
}

// The template comes from --chat-template, tokenizer_config.json (a string or named list),
// chat_template.jinja, or the default, in that order.
func TestLoadChatTemplate(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(override, wantSrc, wantOrigin string) {
		t.Helper()
		src, origin, err := loadChatTemplate(dir, override)
		if err != nil || src != wantSrc || origin != wantOrigin {
			t.Fatalf("got %q from %q (%v), want %q from %q", src, origin, err, wantSrc, wantOrigin)
		}
	}
	check("", DefaultChatTemplate, "default")
	write("tokenizer_config.json", `{"add_bos_token": true}`)
	check("", DefaultChatTemplate, "default")
	write("chat_template.jinja", "J")
	check("", "J", "chat_template.jinja")
	write("tokenizer_config.json", `{"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]}`)
	check("", "D", "tokenizer_config.json")
	write("tokenizer_config.json", `{"chat_template": "S"}`)
	check("", "S", "tokenizer_config.json")
	check("{{ x }}", "{{ x }}", "--chat-template")
	write("t.jinja", "F")
	check(filepath.Join(dir, "t.jinja"), "F", "--chat-template "+filepath.Join(dir, "t.jinja"))
	write("tokenizer_config.json", `{"chat_template": 5}`)
	if _, _, err := loadChatTemplate(dir, ""); err == nil {
		t.Fatal("a numeric chat_template was taken")
	}
}
