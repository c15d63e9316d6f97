package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/spec"
)

// runBench measures decode speed on the chosen adapter: plain greedy decode with per-kernel
// device times and the share of per-dispatch overhead, then the same prompt with speculation
// when a mode is given, side by side in one run.
func runBench(args []string) error {
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	modelDir := fs.String("model", "", "model folder; default: .wspec/models/stories15M")
	adapter := fs.String("adapter", "", "adapter (see `wspec devices`)")
	dtype := fs.String("dtype", "f32", "weight storage: f32 or f16")
	tokens := fs.Int("tokens", 128, "decode steps to time")
	prompt := fs.String("prompt", "Once upon a time", "prompt")
	mode := fs.String("speculative-mode", "", "also time generation with this drafter")
	k := fs.Int("num-speculative-tokens", 4, "draft tokens per step")
	draft := fs.String("draft-model", "", "drafter checkpoint folder")
	if err := fs.Parse(args); err != nil {
		return err
	}
	e, err := spec.Load(*modelDir, spec.LoadOptions{Adapter: *adapter, DType: *dtype, Progress: loadBar()})
	if err != nil {
		return err
	}
	fmt.Printf("%s, %s weights, on %s\n", e.Dir, *dtype, e.Device.Adapter.Info.Name())
	ids := e.Tokenizer.Encode(*prompt, e.Tokenizer.AddBOS())
	b, err := e.Model.BenchDecode(ids, *tokens)
	if err != nil {
		return err
	}
	fmt.Println(b)
	if *mode == "" {
		return nil
	}
	sc, err := speculativeConfig(*mode, *k, *draft, "")
	if err != nil {
		return err
	}
	for _, c := range []*spec.Config{nil, sc} {
		t0 := time.Now()
		res, err := e.Generate(*prompt, spec.GenerateOptions{MaxTokens: *tokens, Speculative: c})
		if err != nil {
			return err
		}
		name := "plain"
		if c != nil {
			name = fmt.Sprintf("%s k=%d", c.Mode, c.NumSpeculativeTokens)
		}
		el := time.Since(t0)
		fmt.Printf("%-14s %d tokens in %.0f ms: %.1f tok/s", name, len(res.Tokens), float64(el.Milliseconds()), float64(len(res.Tokens))/el.Seconds())
		if m := res.Metrics; m.DraftTokens > 0 {
			fmt.Printf(", acceptance %.0f%%, mean acceptance length %.2f", 100*m.AcceptanceRate(), m.MeanAcceptanceLength())
		}
		fmt.Println()
	}
	return nil
}
