package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/runtime/model"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/engine"
)

// runBench measures decode speed on the chosen adapter: plain greedy decode with per-kernel
// device times and the share of per-dispatch overhead, then the same prompt with speculation
// when a mode is given, side by side in one run. With --prompts it benchmarks drafters over a
// prompt set instead (benchspec.go), and with --serve the OpenAI server (benchserve.go).
func runBench(args []string) error {
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	ef := addEngineFlags(fs)
	modelDir, adapter, dtype, sf := ef.model, ef.adapter, ef.dtype, ef.speculate
	tokens := fs.Int("tokens", 128, "decode steps to time")
	prompt := fs.String("prompt", "Once upon a time", "prompt")
	prompts := fs.String("prompts", "", "benchmark drafters over this prompt file (one per line), e.g. spec/distill/prompts/eval.txt")
	maxPrompts := fs.Int("max-prompts", 0, "with --prompts: use the first n prompts (0: all)")
	drafters := fs.String("drafters", "all", "with --prompts: the modes to benchmark, comma-separated, or all")
	ks := fs.String("ks", "1-8,adaptive", "with --prompts: the draft lengths, e.g. 1-8,adaptive or 2,4; adaptive drafts up to the largest k given (8 alone), adaptive:N up to N")
	temps := fs.String("temperatures", "0,0.8", "with --prompts: sampling temperatures (0: greedy)")
	oneHot := fs.Bool("one-hot", false, "with --prompts: at temperatures above 0, each k again with the drafter proposing its argmax one-hot (the baseline of a sampling drafter)")
	verify := fs.String("verify-ks", "", "also time target steps that verify each of these draft counts (e.g. 1,2,4,8,15) against a plain decode step: what a verified row costs on this adapter")
	chatFlag := fs.Bool("chat", false, "with --prompts: send each prompt as a user's message in the model's chat template")
	svgOut := fs.String("svg", "", "with --prompts: write a plot of speed-up and acceptance length against k here")
	sb := addServeBenchFlags(fs)
	jsonOut := sb.json
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *chatFlag && *prompts == "" {
		return fmt.Errorf("--chat renders the prompts of --prompts: give --prompts")
	}
	if *prompts != "" {
		if fs.Changed("speculative-mode") || fs.Changed("speculative-config") || fs.Changed("num-speculative-tokens") {
			return fmt.Errorf("with --prompts the drafters are --drafters and the draft lengths --ks (not --speculative-mode, --speculative-config or -k)")
		}
		b, err := newSpecBench(specBenchFlags{model: *modelDir, adapter: *adapter, dtype: *dtype, draftModel: *sf.draft,
			prompts: *prompts, maxPrompts: *maxPrompts, drafters: *drafters, ks: *ks, temps: *temps, tokens: *tokens, oneHot: *oneHot, chat: *chatFlag})
		if err != nil {
			return err
		}
		rows, err := b.run(context.Background())
		if len(rows) > 0 {
			fmt.Print(specBenchTable(rows))
			if *jsonOut != "" {
				if err := writeJSON(*jsonOut, rows); err != nil {
					return err
				}
			}
			if *svgOut != "" {
				if err := specBenchSVG(*svgOut, rows); err != nil {
					return err
				}
			}
		}
		return err
	}
	if *tokens < 1 {
		return fmt.Errorf("--tokens %d: want at least 1", *tokens)
	}
	var verifyKs []int
	if *verify != "" {
		var err error
		if verifyKs, err = parseInts(*verify); err != nil {
			return fmt.Errorf("--verify-ks: %w", err)
		}
	}
	if *sb.on {
		return sb.start(fs, *modelDir, *adapter, *dtype, *tokens, sf)
	}
	eo, err := ef.options()
	if err != nil {
		return err
	}
	sc := eo.Speculative
	// a step verifies at most the engine's largest draft count (8, or k when larger)
	most := model.DefaultMaxDraft
	if sc != nil {
		most = max(most, sc.NumSpeculativeTokens)
	}
	for _, k := range verifyKs {
		if k < 0 || k > most {
			return fmt.Errorf("--verify-ks %d: want 0 to %d drafts (a speculative mode's -k up to %d raises the bound)", k, most, spec.MaxSpeculativeTokens)
		}
	}
	// plain and speculative runs of one prompt are compared: the second must not find the
	// first's prompt in the prefix cache
	eo.NoPrefixCaching, eo.Progress, eo.FirstRun = true, loadBar(), compileNotice()
	e, err := engine.Load(*modelDir, eo)
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
	if len(verifyKs) > 0 {
		v, err := e.BenchVerify(ctx, *prompt, verifyKs, *tokens)
		if err != nil {
			return err
		}
		fmt.Print(verifyTable(v, *tokens))
	}
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

// verifyTable shows each step's median time and its ratio to a plain decode step, and what one
// verified row adds.
func verifyTable(v []model.VerifyCost, rounds int) string {
	out := fmt.Sprintf("verify: median of %d steps each, the draft counts taking turns\n  %6s %10s %8s %14s\n", rounds, "drafts", "ms/step", "x plain", "per added row")
	for _, c := range v {
		row := ""
		if c.K > 0 {
			row = fmt.Sprintf("%.3f x plain", (c.Ratio-1)/float64(c.K))
		}
		out += fmt.Sprintf("  %6d %10.3f %8.3f %14s\n", c.K, float64(c.Step.Microseconds())/1000, c.Ratio, row)
	}
	return out
}
