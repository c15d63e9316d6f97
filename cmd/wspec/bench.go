package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/spec/engine"
)

// runBench measures decode speed on the chosen adapter: plain greedy decode with per-kernel
// device times and the share of per-dispatch overhead, then the same prompt with speculation
// when a mode is given, side by side in one run. With --serve it measures the OpenAI server
// instead (benchserve.go).
func runBench(args []string) error {
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	modelDir := fs.String("model", "", "model folder; default: .wspec/models/stories15M")
	adapter := fs.String("adapter", "", "adapter (see `wspec devices`)")
	dtype := fs.String("dtype", "f32", "weight storage: f32 or f16")
	tokens := fs.Int("tokens", 128, "decode steps to time")
	prompt := fs.String("prompt", "Once upon a time", "prompt")
	sf := addSpecFlags(fs)
	sb := addServeBenchFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tokens < 1 {
		return fmt.Errorf("--tokens %d: want at least 1", *tokens)
	}
	if *sb.on {
		return sb.start(fs, *modelDir, *adapter, *dtype, *tokens, sf)
	}
	sc, err := sf.config()
	if err != nil {
		return err
	}
	e, err := engine.Load(*modelDir, engine.Options{Adapter: *adapter, DType: *dtype, Progress: loadBar(), Speculative: sc})
	if err != nil {
		return err
	}
	defer e.Close()
	info := e.Info()
	fmt.Printf("%s, %s weights, on %s\n", info.Dir, info.DType, info.Adapter)
	ctx := context.Background()
	b, err := e.BenchDecode(ctx, *prompt, *tokens)
	if err != nil {
		return err
	}
	fmt.Println(b)
	if sc == nil {
		return nil
	}
	for _, plain := range []bool{true, false} {
		t0 := time.Now()
		res, err := e.Generate(ctx, *prompt, engine.GenerateOptions{MaxTokens: *tokens, NoSpeculation: plain})
		if err != nil {
			return err
		}
		name := "plain"
		if !plain {
			name = fmt.Sprintf("%s k=%d", info.Method, info.K)
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
