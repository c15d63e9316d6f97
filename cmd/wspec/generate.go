package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/spec"
)

func runGenerate(args []string) error {
	fs := pflag.NewFlagSet("generate", pflag.ContinueOnError)
	modelDir := fs.String("model", "", "model folder (Hugging Face layout); default: .wspec/models/stories15M")
	maxTokens := fs.Int("max-tokens", 256, "new tokens at most")
	temperature := fs.Float32("temperature", 0, "sampling temperature; 0 is greedy")
	topP := fs.Float32("top-p", 1, "nucleus sampling threshold; 1 is off")
	topK := fs.Int("top-k", 0, "keep the k most likely tokens; 0 is off")
	seed := fs.Uint64("seed", 0, "random seed (the same seed and settings give the same text)")
	adapter := fs.String("adapter", "", "adapter: index, backend (vulkan, metal, d3d12) or type (cpu, discrete-gpu); see `wspec devices`")
	dtype := fs.String("dtype", "f32", "weight storage on the device: f32 or f16")
	mode := fs.String("speculative-mode", "", "speculative decoding: ngram, draft_model, medusa, eagle, eagle3")
	k := fs.Int("num-speculative-tokens", 4, "draft tokens per step (k)")
	draft := fs.String("draft-model", "", "drafter checkpoint folder (draft_model, medusa, eagle, eagle3); default: the repository's spec/drafters/stories15M/<mode>")
	specJSON := fs.String("speculative-config", "", `speculation as one JSON object, e.g. '{"method":"ngram","num_speculative_tokens":4}'`)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: wspec generate [flags] PROMPT\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return fmt.Errorf("no prompt")
	}
	prompt := strings.Join(fs.Args(), " ")
	sc, err := speculativeConfig(*mode, *k, *draft, *specJSON)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "loading %s ...\n", orDefault(*modelDir, "the default model"))
	e, err := spec.Load(*modelDir, spec.LoadOptions{Adapter: *adapter, DType: *dtype, Progress: loadBar(), Speculative: sc})
	if err != nil {
		return err
	}
	if err := checkDrafterTarget(sc, e.Dir); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s on %s, %s weights, %d dispatches per decode step\n", e.Dir, e.Device.Adapter.Info.Name(), *dtype, e.Model.Dispatches())
	fmt.Print(prompt)
	res, err := e.Generate(prompt, spec.GenerateOptions{
		MaxTokens: *maxTokens, Temperature: *temperature, TopP: *topP, TopK: *topK, Seed: *seed,
		Speculative: sc, OnText: func(s string) { fmt.Print(s) },
	})
	fmt.Println()
	if err != nil {
		return err
	}
	printStats(res)
	return nil
}

func speculativeConfig(mode string, k int, draft, js string) (*spec.Config, error) {
	if js != "" {
		var c spec.Config
		if err := json.Unmarshal([]byte(js), &c); err != nil {
			return nil, fmt.Errorf("--speculative-config: %w", err)
		}
		if c.Model == "" {
			c.Model = defaultDrafter(strings.ToLower(strings.TrimSpace(c.Mode)))
		}
		return &c, c.Validate()
	}
	if mode == "" {
		return nil, nil
	}
	if draft == "" {
		draft = defaultDrafter(mode)
	}
	c := spec.Config{Mode: mode, NumSpeculativeTokens: k, Model: draft}
	return &c, c.Validate()
}

func printStats(r *spec.Result) {
	n := len(r.PromptTokens)
	fmt.Fprintf(os.Stderr, "prefill: %d tokens in %.1f ms (%.1f tok/s)\n", n, ms(r.Prefill), float64(n)/r.Prefill.Seconds())
	if g := len(r.Tokens) - 1; g > 0 {
		fmt.Fprintf(os.Stderr, "decode: %d tokens in %.1f ms (%.1f tok/s, %.2f ms/token)\n", g, ms(r.Decode), float64(g)/r.Decode.Seconds(), ms(r.Decode)/float64(g))
	}
	m := r.Metrics
	if m.DraftTokens > 0 {
		fmt.Fprintf(os.Stderr, "speculation: %d drafts, %d draft tokens, %d accepted (%.1f%%), mean acceptance length %.2f, accepted per position %v\n",
			m.Drafts, m.DraftTokens, m.AcceptedTokens, 100*m.AcceptanceRate(), m.MeanAcceptanceLength(), m.AcceptedPerPosition)
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
