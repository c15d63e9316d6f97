package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// editTokenizer rewrites dir's tokenizer.json through edit.
func editTokenizer(t *testing.T, dir string, edit func(doc map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, "tokenizer.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A tokenizer with an added token past the embedding's rows loads, as Gemma 3's real one does
// (<image_soft_token> at 262144, a vocabulary of 262144); a prompt holding that token is an
// error naming it, never a read past the embedding. A plain vocabulary entry past the rows is
// a mismatched tokenizer and is refused at load.
func TestTokenizerPastTheEmbedding(t *testing.T) {
	dir := copyModel(t)
	editTokenizer(t, dir, func(doc map[string]any) {
		added, _ := doc["added_tokens"].([]any)
		doc["added_tokens"] = append(added, map[string]any{"id": 32000, "content": "<image_soft_token>", "special": true})
	})
	e, err := Load(dir, Options{Device: testDevice(t)})
	if err != nil {
		t.Fatalf("an added token past the rows: %v", err)
	}
	defer e.Close()
	_, err = e.Generate(context.Background(), "Once <image_soft_token> upon a time", GenerateOptions{MaxTokens: 2})
	var ie *InvalidError
	if !errors.As(err, &ie) || ie.Param != "prompt" || !strings.Contains(err.Error(), "32000") || !strings.Contains(err.Error(), "<image_soft_token>") {
		t.Fatalf("a prompt holding id 32000: %v", err)
	}
	if res := generate(t, e, "Once upon a time", GenerateOptions{MaxTokens: 3}); len(res.Tokens) != 3 {
		t.Fatalf("then a good prompt: %d tokens", len(res.Tokens))
	}

	bad := copyModel(t)
	editTokenizer(t, bad, func(doc map[string]any) {
		doc["model"].(map[string]any)["vocab"].(map[string]any)["zzzz"] = 32000
	})
	if _, err := Load(bad, Options{Device: testDevice(t)}); err == nil || !strings.Contains(err.Error(), `"zzzz"`) {
		t.Fatalf("a vocabulary entry past the rows: %v", err)
	}
}
