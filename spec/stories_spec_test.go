package spec

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/weights"
)

// storiesEngine is stories15M on the package's device (run ./setup.sh first).
func storiesEngine(t *testing.T) *Engine {
	t.Helper()
	if _, err := os.Stat(storiesDir + "/config.json"); err != nil {
		t.Fatalf("stories15M not converted (%v): run ./setup.sh", err)
	}
	tok, err := weights.LoadTokenizer(storiesDir)
	if err != nil {
		t.Fatal(err)
	}
	host, err := weights.LoadLlama(storiesDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New(loopDevice(t), host, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := host.Cfg
	return &Engine{Device: loopDevice(t), Model: m, Tokenizer: tok, Config: &cfg, Dir: storiesDir}
}

// On stories15M, Generate with the ngram drafter and with stories15M as its own draft model
// (loaded through --speculative-config's model folder) gives plain greedy's 64 tokens for
// k = 1, 4, 8.
func TestStories15MSpeculativeGreedy(t *testing.T) {
	e := storiesEngine(t)
	const prompt = "Once upon a time"
	gen := func(c *Config) *Result {
		t.Helper()
		res, err := e.Generate(prompt, GenerateOptions{MaxTokens: 64, Speculative: c})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	start := time.Now()
	plain := gen(nil)
	t.Logf("plain: %d tokens in %v: %q", len(plain.Tokens), time.Since(start), plain.Text)
	for _, mode := range []string{"ngram", "draft_model"} {
		for _, k := range []int{1, 4, 8} {
			c := Config{Mode: mode, NumSpeculativeTokens: k}
			if mode == "draft_model" {
				c.Model = storiesDir
			}
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			res := gen(&c)
			if !slices.Equal(res.Tokens, plain.Tokens) {
				t.Fatalf("%s k=%d: %q\nplain: %q", mode, k, res.Text, plain.Text)
			}
			met := res.Metrics
			t.Logf("%s k=%d: %v, %d steps, acceptance %.2f, mean acceptance length %.2f", mode, k, time.Since(start),
				met.Steps, met.AcceptanceRate(), met.MeanAcceptanceLength())
			if mode == "draft_model" && met.AcceptanceRate() < 0.9 {
				t.Errorf("stories15M drafting for itself: acceptance %.2f, want > 0.9", met.AcceptanceRate())
			}
		}
	}
}
