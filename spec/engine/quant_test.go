//go:build long

package engine

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/hf2gguf"
	"github.com/wspec/wspec/weights/synth"
)

// Speculation stays exact on a quantized target: a Q4_K_M GGUF target decodes the same greedy
// tokens plainly, with n-gram drafts, and with a draft model that is itself a quantized GGUF
// (a copy of the target's file, so that it drafts well and its kernels are the target's: each
// quantized pipeline costs seconds to compile on a CPU adapter) or a float folder.
func TestQuantizedTargetSpeculationExact(t *testing.T) {
	cfg := weights.Config{Arch: "llama", Dim: 256, HiddenDim: 512, NLayers: 2, NHeads: 4, NKVHeads: 2, HeadDim: 64,
		Vocab: 300, MaxSeq: 256, RopeTheta: 10000, RMSEps: 1e-5, TieEmbed: true, BOS: 298, EOS: []int{299}}
	dir := filepath.Join(t.TempDir(), "hf")
	if err := synth.Write(dir, cfg, synth.Options{DType: weights.F16, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	gguf := func(ft hf2gguf.FileType) string {
		file := filepath.Join(t.TempDir(), ft.Name+".gguf")
		if err := hf2gguf.Convert(dir, file, hf2gguf.Options{FileType: ft}); err != nil {
			t.Fatal(err)
		}
		return file
	}
	target, drafter := gguf(hf2gguf.FileQ4_K_M), gguf(hf2gguf.FileQ4_K_M)
	prompt := "ab ab ab ab ab"
	run := func(sc *spec.Config) *Result {
		e, err := Load(target, Options{Device: testDevice(t), Speculative: sc})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		// Drafting at every step: these drafters cost as much as the target, which adaptive
		// speculation would (rightly) stop using.
		return generate(t, e, prompt, GenerateOptions{MaxTokens: 24, IgnoreEOS: true, FixedSpeculation: sc != nil})
	}
	want := run(nil)
	for name, sc := range map[string]*spec.Config{
		"ngram":             {Mode: "ngram", NumSpeculativeTokens: 3},
		"draft_model gguf":  {Mode: "draft_model", NumSpeculativeTokens: 3, Model: drafter},
		"draft_model float": {Mode: "draft_model", NumSpeculativeTokens: 3, Model: dir},
	} {
		got := run(sc)
		if !slices.Equal(got.Tokens, want.Tokens) {
			t.Errorf("%s: tokens %v, plain decoding %v", name, got.Tokens, want.Tokens)
		}
		if sc.Mode == "draft_model" && got.Metrics.AcceptedTokens < 10 {
			t.Errorf("%s: %d drafts accepted (%+v): the same weights should draft well", name, got.Metrics.AcceptedTokens, got.Metrics)
		}
		t.Logf("%s: %d of %d drafts accepted", name, got.Metrics.AcceptedTokens, got.Metrics.DraftTokens)
	}
}
