package chat

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wspec/wspec/weights/chat/internal/jinja"
)

func msgs(pairs ...string) Input {
	in := Input{AddGenerationPrompt: true}
	for i := 0; i+1 < len(pairs); i += 2 {
		in.Messages = append(in.Messages, Message{Role: pairs[i], Content: pairs[i+1]})
	}
	return in
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
		in        Input
		want      string
	}{
		{"chatml", chatML, false, msgs("user", "Hi"), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
		{"llama3", llama3, false, msgs("user", " Hi "), "<s><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"llama3 strip bos", llama3, true, msgs("user", "Hi"), "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"llama2", llama2, false, conv, "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello. </s><s>[INST] A story? [/INST]"},
		{"blocks", blocks, false, msgs("user", "a", "assistant", "b", "user", "c"), "[a]\n[c]\n"},
		{"default", Default, false, conv, "Be brief.\n\nUser: Hi \nAssistant: Hello.\nUser: A story?\nAssistant:"},
	} {
		tpl, err := New(c.src, c.name, "<s>", "</s>", c.stripBOS)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := tpl.Render(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
	// raise_exception is the request's fault, reported with the template's message.
	tpl, err := New(llama2, "llama2", "<s>", "</s>", false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tpl.Render(msgs("user", "a", "user", "b"))
	if !errors.Is(err, ErrRaised) || err.Error() != ErrRaised.Error()+": Conversation roles must alternate user/assistant/user/assistant/..." {
		t.Fatalf("raise_exception: %v", err)
	}
	// A template cannot read files.
	tpl, err = New(`{% include "/etc/hostname" %}`, "include", "", "", false)
	if err == nil {
		if out, err := tpl.Render(msgs("user", "a")); err == nil {
			t.Fatalf("include rendered %q", out)
		}
	}
	if _, err := New(`{% for %}`, "broken", "", "", false); err == nil {
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
		src, origin, err := Load(dir, override)
		if err != nil || src != wantSrc || origin != wantOrigin {
			t.Fatalf("got %q from %q (%v), want %q from %q", src, origin, err, wantSrc, wantOrigin)
		}
	}
	check("", Default, "default")
	write("tokenizer_config.json", `{"add_bos_token": true}`)
	check("", Default, "default")
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
	if _, _, err := Load(dir, ""); err == nil {
		t.Fatal("a numeric chat_template was taken")
	}
}

// tojson writes JSON as transformers' tojson (Python's json.dumps with ensure_ascii off) does:
// keys in order, nothing escaped but quotes, backslashes and control characters, Python's
// float repr, the indent and separators forms.
func TestTojson(t *testing.T) {
	v, err := jsonValue([]byte(`{"b": 1, "a": [1.0, 0.5, 1e-05, 1e16, 123456789012345.0, -0.0, 1e6], "s": "<é\u2028\n\u0001\"\\>", "e": {}, "l": [], "n": null, "t": true}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		src, want string
	}{
		{`{{ v | tojson }}`, `{"b": 1, "a": [1.0, 0.5, 1e-05, 1e+16, 123456789012345.0, -0.0, 1000000.0], "s": "<é` + "\u2028" + `\n\u0001\"\\>", "e": {}, "l": [], "n": null, "t": true}`},
		{`{{ v.a[:2] | tojson(indent=2) }}`, "[\n  1.0,\n  0.5\n]"},
		{`{{ v.e | tojson(indent=2) }}{{ {"k": v.l} | tojson(indent=1) }}`, "{}{\n \"k\": []\n}"},
		{`{{ v.t | tojson }} {{ v | tojson(sort_keys=true, separators=[",", ":"]) | length }}`, "true 121"},
	} {
		tpl, err := New(c.src, "t", "", "", false)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := tpl.data(Input{})
		data["v"] = v
		data[tojsonName] = jinja.NewCallable("tojson", tojson)
		got, err := tpl.tpl.RenderValues(data)
		if err != nil || got != c.want {
			t.Errorf("%s: %q (%v), want %q", c.src, got, err, c.want)
		}
	}
}

// strftime_now reads the template's clock; continue_final_message leaves the last message
// open as transformers does.
func TestStrftimeAndContinue(t *testing.T) {
	tpl, err := New(`{{ strftime_now("%d %b %Y, %A %-d %B %H:%M:%S %j %%") }}`, "t", "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	tpl.Now = func() time.Time { return time.Date(2026, 3, 7, 14, 5, 9, 0, time.UTC) }
	if got, err := tpl.Render(Input{}); err != nil || got != "07 Mar 2026, Saturday 7 March 14:05:09 066 %" {
		t.Errorf("strftime_now: %q (%v)", got, err)
	}
	chatML := "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
	tpl, err = New(chatML, "chatml", "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	in := msgs("user", "Write.", "assistant", "Once upon ")
	in.AddGenerationPrompt, in.ContinueFinalMessage = false, true
	if got, err := tpl.Render(in); err != nil || got != "<|im_start|>user\nWrite.<|im_end|>\n<|im_start|>assistant\nOnce upon " {
		t.Errorf("continue_final_message: %q (%v)", got, err)
	}
	in.AddGenerationPrompt = true
	if _, err := tpl.Render(in); !errors.Is(err, ErrRaised) {
		t.Errorf("both add_generation_prompt and continue_final_message: %v", err)
	}
}
