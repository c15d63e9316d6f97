package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/spec/drafters"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/synth"
)

// runSynth writes a random-weight checkpoint in a real model's shape, or inflates a small
// model to a real size (for tests and benchmarks at real sizes).
func runSynth(args []string) error {
	fs := pflag.NewFlagSet("synth", pflag.ContinueOnError)
	shape := fs.String("shape", "llama-3.2-1b", "the model shape: "+strings.Join(synth.Names(), ", "))
	out := fs.String("out", "", "output folder (Hugging Face layout; must not exist)")
	dtype := fs.String("dtype", "f16", "stored type: f16, bf16 or f32")
	seed := fs.Uint64("seed", 1, "random seed")
	tok := fs.String("tokenizer", "", "a tokenizer.json to copy (default: a byte-level one)")
	maxLen := fs.Int("max-position-embeddings", 0, "the context config.json gives (0: the shape's)")
	inflate := fs.String("inflate", "", "a small Llama-family Hugging Face folder to inflate (instead of random weights)")
	var size synth.Size
	fs.IntVar(&size.Hidden, "hidden", 1536, "with --inflate: the hidden size")
	fs.IntVar(&size.Heads, "heads", 32, "with --inflate: the attention heads (of the small model's head size)")
	fs.IntVar(&size.Intermediate, "intermediate", 8192, "with --inflate: the MLP's width")
	fs.IntVar(&size.Layers, "layers", 22, "with --inflate: the layers")
	draftersOut := fs.String("drafters-out", "", "with --inflate of the default model: also write its shipped drafters for the inflated model into this folder (medusa, eagle, eagle3 inflated; draft_model retargeted)")
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: wspec synth --shape NAME --out DIR [--dtype f16] [--seed S] [--tokenizer FILE]\n"+
			"       wspec synth --inflate SMALL --out DIR [--hidden 1536 --heads 32 --intermediate 8192 --layers 22] [--dtype f16]\n\n"+
			"Writes a checkpoint with random weights in the shape of a real model (there are no real weights to\n"+
			"download here), scaled so that greedy text is not a tie of near-equal tokens. With --inflate, a small\n"+
			"model padded to a real size that computes the same function: its text, and its drafters' acceptance,\n"+
			"are the small model's, its step costs what a real model's of that size costs (the default size from\n"+
			"stories15M is about 1.1B parameters).\n\nflags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *inflate != "" {
		return runInflate(*inflate, *out, *dtype, size, *draftersOut)
	}
	cfg, ok := synth.Shapes[*shape]
	switch {
	case !ok:
		return fmt.Errorf("--shape %q: want one of %s", *shape, strings.Join(synth.Names(), ", "))
	case *out == "":
		return fmt.Errorf("--out is required")
	case *maxLen < 0:
		return fmt.Errorf("--max-position-embeddings %d: want 0 (the shape's) or more", *maxLen)
	case *maxLen > 0:
		cfg.MaxSeq = *maxLen
	}
	dt := weights.DType(strings.ToUpper(*dtype))
	if dt != weights.F16 && dt != weights.BF16 && dt != weights.F32 {
		return fmt.Errorf("--dtype %q: want f16, bf16 or f32", *dtype)
	}
	fmt.Fprintf(os.Stderr, "writing a random %s (%s) into %s ...\n", *shape, dt, *out)
	if err := synth.Write(*out, cfg, synth.Options{DType: dt, Seed: *seed, Tokenizer: *tok}); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", *out)
	return nil
}

// runInflate writes the small model inflated to size into out, and when draftersOut is set
// the default model's shipped drafters for it into draftersOut/METHOD: the heads inflated, the
// draft model retargeted.
func runInflate(small, out, dtype string, size synth.Size, draftersOut string) error {
	dt := weights.DType(strings.ToUpper(dtype))
	switch {
	case out == "":
		return fmt.Errorf("--out is required")
	case dt != weights.F16 && dt != weights.BF16 && dt != weights.F32:
		return fmt.Errorf("--dtype %q: want f16, bf16 or f32", dtype)
	}
	fmt.Fprintf(os.Stderr, "inflating %s to hidden %d, %d heads, intermediate %d, %d layers (%s) into %s ...\n",
		small, size.Hidden, size.Heads, size.Intermediate, size.Layers, dt, out)
	if draftersOut != "" {
		if _, err := os.Stat(draftersOut); err == nil {
			return fmt.Errorf("--drafters-out %s: already exists", draftersOut)
		}
		if err := checkShippedTarget(small); err != nil {
			return err
		}
	}
	if err := synth.WriteInflated(out, small, size, synth.Options{DType: dt}); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", out)
	if draftersOut == "" {
		return nil
	}
	if err := os.MkdirAll(draftersOut, 0o755); err != nil {
		return err
	}
	for _, method := range []string{"medusa", "eagle", "eagle3"} {
		dir, err := drafters.Dir(method)
		if err != nil {
			return err
		}
		to := filepath.Join(draftersOut, method)
		if err := synth.WriteInflatedDrafter(to, method, dir, small, size, dt); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		fmt.Fprintf(os.Stderr, "wrote %s (use it with --speculative-mode %s --draft-model %s)\n", to, method, to)
	}
	// the shipped draft model drafts tokens, not features: a copy naming the inflated target
	dir, err := drafters.Dir("draft_model")
	if err != nil {
		return err
	}
	to := filepath.Join(draftersOut, "draft_model")
	if err := synth.WriteRetargeted(to, dir, out); err != nil {
		return fmt.Errorf("draft_model: %w", err)
	}
	fmt.Fprintf(os.Stderr, "wrote %s (use it with --speculative-mode draft_model --draft-model %s; %s itself drafts its inflation exactly)\n", to, to, small)
	return nil
}

// checkShippedTarget says whether small is the model the shipped drafters were trained for.
func checkShippedTarget(small string) error {
	m, err := weights.OpenWeights(small)
	if err != nil {
		return err
	}
	defer m.Close()
	dir, err := drafters.Dir("eagle3")
	if err != nil {
		return err
	}
	if err := weights.CheckTargetModel(dir, m); err != nil {
		return fmt.Errorf("--drafters-out: the shipped drafters are %s's: %w", drafters.Model, err)
	}
	return nil
}
