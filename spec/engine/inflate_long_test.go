//go:build long

package engine

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/drafters"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/synth"
)

// stories15M inflated (wspec synth --inflate, F16 on the device) writes stories15M's greedy
// text, plainly, with n-gram speculation and with the shipped draft model retargeted for it.
func TestInflatedStoriesOnDevice(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "inflated")
	if err := synth.WriteInflated(dir, storiesDir, synth.Size{Hidden: 576, Heads: 12, Intermediate: 1536, Layers: 9}, synth.Options{DType: weights.F16}); err != nil {
		t.Fatal(err)
	}
	o := GenerateOptions{MaxTokens: 48}
	small, err := Load(storiesDir, Options{Device: testDevice(t), DType: "f16"})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	want, err := small.Generate(context.Background(), "Once upon a time", o)
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := drafters.Dir("draft_model")
	if err != nil {
		t.Fatal(err)
	}
	draft := filepath.Join(t.TempDir(), "draft_model")
	if err := synth.WriteRetargeted(draft, shipped, dir); err != nil {
		t.Fatal(err)
	}
	for _, sc := range []*spec.Config{nil, {Mode: "ngram", NumSpeculativeTokens: 4}, {Mode: "draft_model", NumSpeculativeTokens: 4, Model: draft}} {
		big, err := Load(dir, Options{Device: testDevice(t), Speculative: sc})
		if err != nil {
			t.Fatal(err)
		}
		got, err := big.Generate(context.Background(), "Once upon a time", o)
		big.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got.Text != want.Text {
			t.Errorf("inflated (speculation %+v): %q\nstories15M: %q", sc, got.Text, want.Text)
		}
	}
}
