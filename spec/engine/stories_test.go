package engine

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/devtest"
	"github.com/wspec/wspec/spec"
)

const storiesDir = "../../.wspec/models/stories15M"

// testDevice is the package's tests' device (devtest.Device).
func testDevice(t testing.TB) *runtime.Device { return devtest.Device(t) }

// stories loads stories15M (run ./setup.sh first) on the package's device with speculation
// sc; the test's cleanup closes it.
func stories(t testing.TB, sc *spec.Config) *Engine {
	t.Helper()
	if _, err := os.Stat(storiesDir + "/config.json"); err != nil {
		t.Fatalf("stories15M not converted (%v): run ./setup.sh", err)
	}
	e, err := Load(storiesDir, Options{Device: testDevice(t), Speculative: sc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func generate(t testing.TB, e *Engine, prompt string, o GenerateOptions) *Result {
	t.Helper()
	res, err := e.Generate(context.Background(), prompt, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// On stories15M, the ngram and suffix drafters and stories15M as its own draft model give
// plain greedy's 64 tokens for k = 1, 4, 8 (8 is the engine's k; the others are asked per
// generation).
func TestStories15MSpeculativeGreedy(t *testing.T) {
	const prompt = "Once upon a time"
	for _, mode := range []string{"ngram", "suffix", "draft_model"} {
		sc := &spec.Config{Mode: mode, NumSpeculativeTokens: 8}
		if mode == "draft_model" {
			sc.Model = storiesDir
		}
		e := stories(t, sc)
		start := time.Now()
		plain := generate(t, e, prompt, GenerateOptions{MaxTokens: 64, NoSpeculation: true})
		t.Logf("plain: %d tokens in %v: %q", len(plain.Tokens), time.Since(start), plain.Text)
		if plain.Metrics.DraftTokens != 0 || plain.Finish != spec.FinishLength {
			t.Fatalf("NoSpeculation drafted %d tokens, finish %q", plain.Metrics.DraftTokens, plain.Finish)
		}
		for _, k := range []int{1, 4, 8} {
			start := time.Now()
			res := generate(t, e, prompt, GenerateOptions{MaxTokens: 64, NumSpeculativeTokens: k})
			if !slices.Equal(res.Tokens, plain.Tokens) {
				t.Fatalf("%s k=%d: %q\nplain: %q", mode, k, res.Text, plain.Text)
			}
			met := res.Metrics
			t.Logf("%s k=%d: %v, %d steps, acceptance %.2f, mean acceptance length %.2f", mode, k, time.Since(start),
				met.Steps, met.AcceptanceRate(), met.MeanAcceptanceLength())
			if len(met.AcceptedPerPosition) > k {
				t.Errorf("%s k=%d: drafts at %d positions", mode, k, len(met.AcceptedPerPosition))
			}
			if mode == "draft_model" && met.AcceptanceRate() < 0.9 {
				t.Errorf("stories15M drafting for itself: acceptance %.2f, want > 0.9", met.AcceptanceRate())
			}
		}
	}
}
