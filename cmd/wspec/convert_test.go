package main

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/home"
)

// convert --from llama2c --to gguf goes through a Hugging Face folder to a (here quantized)
// GGUF file whose tokenizer and configuration are the converted folder's.
func TestConvertLlama2cToGGUF(t *testing.T) {
	raw := filepath.Join(home.Default(), "models", "stories15M-llama2c")
	out := filepath.Join(t.TempDir(), "s.gguf")
	err := runConvert([]string{"--from", "llama2c", filepath.Join(raw, "model.bin"), filepath.Join(raw, "tokenizer.bin"),
		"--to", "gguf", "--out", out, "--quantize", "q8_0"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := weights.OpenModel(out)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	f, err := weights.OpenModel(filepath.Join(home.Default(), "models", "stories15M"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	text := "Once upon a time, Lily saw a big dog."
	if a, b := g.Tokenizer.Encode(text, true), f.Tokenizer.Encode(text, true); !slices.Equal(a, b) || g.Config.Dim != f.Config.Dim {
		t.Errorf("GGUF tokens %v (dim %d), the folder's %v (dim %d)", a, g.Config.Dim, b, f.Config.Dim)
	}
	if st, err := g.Source.(weights.QuantSource).StoredType(weights.LayerTensorName(0, weights.WqSuffix)); err != nil || st.String() != "Q8_0" {
		t.Errorf("layer 0's q is %v (%v), want Q8_0", st, err)
	}
	if err := runConvert([]string{"--from", "llama2c", "a.bin", "b.bin", "--to", "gguf", "--out", out, "--outtype", "q3_k"}); err == nil {
		t.Error("--outtype q3_k: no error")
	}
}
