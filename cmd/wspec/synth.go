package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/weights"
	"github.com/wspec/wspec/weights/synth"
)

// runSynth writes a random-weight checkpoint in a real model's shape (for tests and
// benchmarks at real sizes).
func runSynth(args []string) error {
	fs := pflag.NewFlagSet("synth", pflag.ContinueOnError)
	shape := fs.String("shape", "llama-3.2-1b", "the model shape: "+strings.Join(synth.Names(), ", "))
	out := fs.String("out", "", "output folder (Hugging Face layout; must not exist)")
	dtype := fs.String("dtype", "f16", "stored type: f16, bf16 or f32")
	seed := fs.Uint64("seed", 1, "random seed")
	tok := fs.String("tokenizer", "", "a tokenizer.json to copy (default: a byte-level one)")
	maxLen := fs.Int("max-position-embeddings", 0, "the context config.json gives (0: the shape's)")
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: wspec synth --shape NAME --out DIR [--dtype f16] [--seed S] [--tokenizer FILE]\n\n"+
			"Writes a checkpoint with random weights in the shape of a real model (there are no real weights to\n"+
			"download here), scaled so that greedy text is not a tie of near-equal tokens.\n\nflags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		return err
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
