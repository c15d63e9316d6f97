package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wspec/wspec/weights"
)

const storiesDir = "../.wspec/models/stories15M"

// copyModel copies the stories15M folder (run ./setup.sh first) so a test can break it.
func copyModel(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(storiesDir, f))
		if err != nil {
			if os.IsNotExist(err) && f == "generation_config.json" {
				continue
			}
			t.Fatalf("%v (run ./setup.sh)", err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadRefusesBadModels(t *testing.T) {
	unknown := copyModel(t)
	cfg, _ := os.ReadFile(filepath.Join(unknown, "config.json"))
	os.WriteFile(filepath.Join(unknown, "config.json"), []byte(strings.Replace(string(cfg), `"llama"`, `"gpt_neox"`, 1)), 0o644)
	if _, err := Load(unknown, LoadOptions{}); !errors.Is(err, weights.ErrUnknownArch) || !strings.Contains(err.Error(), "gpt_neox") {
		t.Fatalf("unknown architecture: want ErrUnknownArch naming gpt_neox, got %v", err)
	}
	truncated := copyModel(t)
	p := filepath.Join(truncated, "model.safetensors")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, b[:len(b)/2], 0o644)
	if _, err := Load(truncated, LoadOptions{}); err == nil || !errors.Is(err, weights.ErrMalformed) {
		t.Fatalf("truncated weights: want ErrMalformed, got %v", err)
	}
	if _, err := Load(copyModel(t), LoadOptions{DType: "f8"}); err == nil || !strings.Contains(err.Error(), "f8") {
		t.Fatalf("unknown dtype: got %v", err)
	}
}

func TestGeneratePromptTooLong(t *testing.T) {
	e, err := Load(storiesDir, LoadOptions{})
	if err != nil {
		t.Fatalf("%v (run ./setup.sh)", err)
	}
	_, err = e.Generate(strings.Repeat("Once upon a time ", 80), GenerateOptions{MaxTokens: 5})
	if !errors.Is(err, ErrPromptTooLong) {
		t.Fatalf("want ErrPromptTooLong, got %v", err)
	}
	var text strings.Builder
	res, err := e.Generate("Once upon a time", GenerateOptions{MaxTokens: 12, OnText: func(s string) { text.WriteString(s) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tokens) != 12 || !strings.HasPrefix(text.String(), ", there was a little girl") || text.String() != res.Text {
		t.Fatalf("12 greedy tokens: %d tokens, streamed %q, text %q", len(res.Tokens), text.String(), res.Text)
	}
}

// TestGenerateValidatesSpeculation: the Go API validates a speculative config as the CLI does
// (defaults filled, a bad k refused) and reports the metrics.
func TestGenerateValidatesSpeculation(t *testing.T) {
	e, err := Load(storiesDir, LoadOptions{})
	if err != nil {
		t.Fatalf("%v (run ./setup.sh)", err)
	}
	if _, err := e.Generate("Once upon a time", GenerateOptions{MaxTokens: 4, Speculative: &Config{Mode: "ngram", NumSpeculativeTokens: 20}}); err == nil {
		t.Fatal("k = 20 accepted")
	}
	res, err := e.Generate("Once upon a time, once upon a time, once upon a", GenerateOptions{MaxTokens: 16,
		Speculative: &Config{Mode: "ngram", NumSpeculativeTokens: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Metrics.Steps == 0 || len(res.Tokens) != 16 {
		t.Fatalf("metrics %+v, %d tokens", res.Metrics, len(res.Tokens))
	}
}
