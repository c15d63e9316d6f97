package chat

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wspec/wspec/weights/tokenizer"
)

// A model's template: --chat-template over a GGUF file's own over the folder's; UserPrompt is
// one user's message and the generation prompt.
func TestForModel(t *testing.T) {
	tok, err := tokenizer.Load("../../.wspec/models/stories15M")
	if err != nil {
		t.Fatalf("stories15M not set up (%v): run ./setup.sh", err)
	}
	dir := t.TempDir()
	folder := `{"chat_template": "F{{ messages[0]['content'] }}{% if add_generation_prompt %}>{% endif %}"}`
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(folder), 0o644); err != nil {
		t.Fatal(err)
	}
	const embedded = "E{{ messages[0]['content'] }}"
	for _, c := range []struct{ embedded, override, want, origin string }{
		{"", "", "Fhi>", "tokenizer_config.json"},
		{embedded, "", "Ehi", "the GGUF file's tokenizer.chat_template"},
		{embedded, "O{{ messages[0]['content'] }}", "Ohi", "--chat-template"},
	} {
		tpl, err := ForModel(dir, c.embedded, c.override, tok)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := tpl.UserPrompt("hi"); err != nil || got != c.want || tpl.Origin != c.origin {
			t.Errorf("embedded %q, override %q: %q from %s (%v), want %q from %s", c.embedded, c.override, got, tpl.Origin, err, c.want, c.origin)
		}
	}
}
