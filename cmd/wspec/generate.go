package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/spec"
	"github.com/wspec/wspec/spec/engine"
	"github.com/wspec/wspec/spec/grammar"
)

// specFlags are the speculative decoding flags `generate`, `bench` and `serve` share.
type specFlags struct {
	fs    *pflag.FlagSet
	mode  *string
	k     *int
	draft *string
	json  *string
}

func addSpecFlags(fs *pflag.FlagSet) *specFlags {
	return &specFlags{fs: fs,
		mode:  fs.String("speculative-mode", "", "speculative decoding: "+strings.Join(spec.Names(), ", ")),
		k:     fs.IntP("num-speculative-tokens", "k", 4, "draft tokens per step (k), with a speculative mode"),
		draft: fs.String("draft-model", "", "drafter checkpoint folder (draft_model, medusa, eagle, eagle3; a draft_model may be a GGUF file); default: the drafter shipped for the default model"),
		json:  fs.String("speculative-config", "", `speculation as one JSON object, e.g. '{"method":"ngram","num_speculative_tokens":4}'`),
	}
}

// config turns the flags into a speculative config (nil: none), which engine.Load validates.
// Flags that would be ignored are errors: -k or --draft-model without a mode, and any of them
// with --speculative-config.
func (f *specFlags) config() (*spec.Config, error) {
	set := func(names ...string) []string {
		var out []string
		for _, n := range names {
			if f.fs.Changed(n) {
				out = append(out, "--"+n)
			}
		}
		return out
	}
	if *f.json != "" {
		if c := set("speculative-mode", "num-speculative-tokens", "draft-model"); len(c) > 0 {
			return nil, fmt.Errorf("%s conflicts with --speculative-config (put it in the JSON instead)", strings.Join(c, " and "))
		}
		var c spec.Config
		if err := json.Unmarshal([]byte(*f.json), &c); err != nil {
			return nil, fmt.Errorf("--speculative-config: %w", err)
		}
		return &c, nil
	}
	if *f.mode == "" {
		if c := set("num-speculative-tokens", "draft-model"); len(c) > 0 {
			return nil, fmt.Errorf("%s given without --speculative-mode", strings.Join(c, " and "))
		}
		return nil, nil
	}
	return &spec.Config{Mode: *f.mode, NumSpeculativeTokens: *f.k, Model: *f.draft}, nil
}

// addSamplingFlags adds a flag for each of engine.SamplingParams (--top-p for top_p, at its
// Default); the function it returns reads them into a Sampling.
func addSamplingFlags(fs *pflag.FlagSet) func() (engine.Sampling, error) {
	vals := make([]func() float64, len(engine.SamplingParams))
	for i := range engine.SamplingParams {
		p := &engine.SamplingParams[i]
		help := fmt.Sprintf("%s: %s", p.Help, p.Want)
		if p.Int {
			v := fs.Int(p.FlagName(), int(p.Default), help)
			vals[i] = func() float64 { return float64(*v) }
		} else {
			v := fs.Float64(p.FlagName(), p.Default, help)
			vals[i] = func() float64 { return *v }
		}
	}
	return func() (engine.Sampling, error) {
		s := engine.DefaultSampling()
		for i := range engine.SamplingParams {
			p := &engine.SamplingParams[i]
			if err := p.Set(&s, vals[i]()); err != nil {
				return s, fmt.Errorf("--%s: %w", p.FlagName(), err)
			}
		}
		return s, nil
	}
}

func runGenerate(args []string) error {
	fs := pflag.NewFlagSet("generate", pflag.ContinueOnError)
	maxTokens := fs.Int("max-tokens", 256, "new tokens at most; 0: until the end of the context (where generation always stops)")
	sampling := addSamplingFlags(fs)
	seed := fs.Uint64("seed", 0, "random seed (the same seed and settings give the same text)")
	stops := fs.StringArray("stop", nil, "end the text where this string appears (repeatable)")
	ignoreEOS := fs.Bool("ignore-eos", false, "keep generating past the model's end-of-sequence tokens (vLLM's ignore_eos)")
	sf := addStructuredFlags(fs)
	ef := addEngineFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: wspec generate [flags] PROMPT\n\nflags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return fmt.Errorf("no prompt")
	}
	prompt := strings.Join(fs.Args(), " ")
	eo, err := ef.options()
	if err != nil {
		return err
	}
	opts := engine.GenerateOptions{MaxTokens: *maxTokens, Stop: *stops, IgnoreEOS: *ignoreEOS, OnText: func(s string) { fmt.Print(s) }}
	if opts.Sampling, err = sampling(); err != nil {
		return err
	}
	opts.Seed = *seed
	if opts.Structured, err = sf.spec(); err != nil {
		return err
	}
	if err := opts.Validate(0); err != nil { // the same check as the engine's, before the model loads
		return err
	}
	fmt.Fprintf(os.Stderr, "loading %s ...\n", orDefault(*ef.model, "the default model"))
	eo.Progress, eo.FirstRun = loadBar(), compileNotice()
	t0 := time.Now()
	e, err := engine.Load(*ef.model, eo)
	if err != nil {
		return err
	}
	defer e.Close()
	info := e.Info()
	fmt.Fprintf(os.Stderr, "%s on %s, %s weights, %d dispatches per decode step, loaded in %.1f s\n%s\n",
		info.Dir, info.Adapter, info.DType, info.Dispatches, time.Since(t0).Seconds(), info.Memory)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Print(prompt)
	res, err := e.Generate(ctx, prompt, opts)
	fmt.Println()
	if err != nil {
		return err
	}
	printStats(res)
	switch res.Finish {
	case spec.FinishContextFull:
		fmt.Fprintf(os.Stderr, "stopped: the output reached the end of the model's context (%d tokens)\n", info.Config.MaxSeq)
	case spec.FinishCancelled:
		fmt.Fprintf(os.Stderr, "stopped: interrupted after %d tokens\n", len(res.Tokens))
	}
	return nil
}

func printStats(r *engine.Result) {
	n := len(r.PromptTokens)
	fmt.Fprintf(os.Stderr, "prefill: %d tokens in %.1f ms (%.1f tok/s)\n", n, ms(r.Prefill), float64(n)/r.Prefill.Seconds())
	if g := len(r.Tokens) - 1; g > 0 {
		fmt.Fprintf(os.Stderr, "decode: %d tokens in %.1f ms (%.1f tok/s, %.2f ms/token)\n", g, ms(r.Decode), float64(g)/r.Decode.Seconds(), ms(r.Decode)/float64(g))
	}
	m := r.Metrics
	if m.DraftTokens > 0 {
		fmt.Fprintf(os.Stderr, "speculation: %d of %d steps drafted (%.0f%%), %d draft tokens, %d accepted (%.1f%%), mean acceptance length %.2f (vLLM's: 1 + accepted / drafts), accepted per position %v\n",
			m.Drafts, m.Steps, 100*m.DraftingShare(), m.DraftTokens, m.AcceptedTokens, 100*m.AcceptanceRate(), m.MeanAcceptanceLength(), m.AcceptedPerPosition)
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// structuredFlags are generate's structured outputs: at most one of them.
type structuredFlags struct {
	fs                  *pflag.FlagSet
	schema, grammarFile *string
	regex, choice       *string
	jsonObject          *bool
}

func addStructuredFlags(fs *pflag.FlagSet) *structuredFlags {
	return &structuredFlags{fs: fs,
		schema:      fs.String("json-schema", "", "the output is JSON this JSON Schema file validates"),
		jsonObject:  fs.Bool("json", false, "the output is a JSON object"),
		regex:       fs.String("regex", "", "the output is a string this regular expression (RE2) matches whole"),
		choice:      fs.String("choice", "", "the output is one of these comma-separated strings"),
		grammarFile: fs.String("grammar", "", "the output matches this GBNF grammar file (rule root)"),
	}
}

// spec reads the flag given (nil: none); two of them are an error, and so is a file that
// cannot be read. Whether it compiles is the engine's to say.
func (f *structuredFlags) spec() (*grammar.Spec, error) {
	var set []string
	for _, n := range []string{"json-schema", "json", "regex", "choice", "grammar"} {
		if f.fs.Changed(n) {
			set = append(set, "--"+n)
		}
	}
	switch {
	case len(set) == 0:
		return nil, nil
	case len(set) > 1:
		return nil, fmt.Errorf("%s: give one structured output", strings.Join(set, " and "))
	}
	read := func(path string) (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", set[0], err)
		}
		return string(b), nil
	}
	var s grammar.Spec
	var err error
	switch set[0] {
	case "--json-schema":
		s.Kind = grammar.JSONSchema
		s.Text, err = read(*f.schema)
	case "--json":
		s.Kind = grammar.JSONObject
	case "--regex":
		s.Kind, s.Text = grammar.Regex, *f.regex
	case "--choice":
		s.Kind, s.Choices = grammar.Choice, strings.Split(*f.choice, ",")
	case "--grammar":
		s.Kind = grammar.GBNF
		s.Text, err = read(*f.grammarFile)
	}
	if err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", set[0], err)
	}
	return &s, nil
}
